"""``-t dialeval:fed``: the FED dataset (Mehri and Eskenazi 2020)."""
