"""The databases the Core Data API reads from: one module per kind of source (its driver and SQL dialect), the
protocol they share (:mod:`.base`) and the registry that opens a source from its URL (:mod:`.registry`)."""
