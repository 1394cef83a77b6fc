// Served by er analyzer: empty. A static report (er analyzer --html) replaces it with its data.
