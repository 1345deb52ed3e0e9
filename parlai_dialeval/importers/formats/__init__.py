"""Importer modules; importing each registers its formats with the importer registry."""
