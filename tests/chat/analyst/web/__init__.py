"""The web analytics model, dataset and blind question suite for the built-in analyst (see README.md)."""
