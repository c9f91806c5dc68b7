"""The Core Data API over HTTP and as functions: routing, tokens, data sources, the result cache, kept answers."""
