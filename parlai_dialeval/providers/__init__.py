"""Crowd providers of our own for Mephisto 1.1.1 (Prolific). Mephisto's registry only scans its own
package: ``compat/mephisto.py`` (``providers_on_import``, installed by ``import parlai_dialeval``) imports
them right after ``import mephisto`` finishes."""
