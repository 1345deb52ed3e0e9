"""``-t dialeval:ji2022``: Ji et al. (2022) live-chat conversations with their ratings."""
