// Package browsertests drives the Analyzer web GUI in a real headless Chromium.
package browsertests
