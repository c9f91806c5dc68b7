"""Semantic SQL (/v1/cubesql and the chat tool): a SELECT over cubes and views, translated into a query."""
