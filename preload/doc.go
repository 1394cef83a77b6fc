// Package preload holds the collector library that er collect loads into the target with
// LD_PRELOAD (plain C, built by make) and the Go tests that build and exercise it.
package preload
