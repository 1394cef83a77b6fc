// Package version holds er's version string.
package version

// Version is er's release, written into every experiment's log.xml.
const Version = "0.1.0"

// String is what `er -V` and er_print's `version` print.
func String() string { return "er " + Version + " (a performance analyzer for Linux)" }
