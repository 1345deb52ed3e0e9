"""Importer modules; importing each registers its formats with the importer registry."""
from parlai_dialeval.importers.formats import chateval, fed  # noqa: F401
from parlai_dialeval.importers.formats import ji2022  # noqa: F401,E402
from parlai_dialeval.importers.formats import parlai_formats  # noqa: F401,E402
from parlai_dialeval.importers.formats import published  # noqa: F401,E402
from parlai_dialeval.importers.formats import arena  # noqa: F401,E402
