"""Live-chat direct assessment (Ji et al., 2022): workers chat with N blind chatbots, one a QC bot."""
