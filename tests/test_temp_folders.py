"""What a run puts in the system's temporary folder is gone when the process ends (issue 29: launches and
tests left a dialeval_prolific_js_* folder behind each)."""
from __future__ import annotations

import os
import subprocess
import sys


def test_the_prolific_page_wrapper_is_removed_when_the_process_ends(tmp_path):
    code = ("from parlai_dialeval.providers.prolific.page import render_wrapper\n"
            "path = render_wrapper('https://app.prolific.com/submissions/complete')\n"
            "assert 'app.prolific.com/submissions/complete' in path.read_text(), path.read_text()\n"
            "print(path.parent.name)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "TMPDIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().startswith("dialeval_prolific_js_")  # it was made in this temporary folder
    assert list(tmp_path.iterdir()) == []
