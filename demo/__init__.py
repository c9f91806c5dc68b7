"""The demo e-commerce dataset (``generate.py``) and its Cube data model (``model/``)."""
