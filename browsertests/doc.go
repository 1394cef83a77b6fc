// Package browsertests drives the Analyzer web GUI (er analyzer) in a real headless Chromium.
//
// It is a module of its own so that er itself does not depend on chromedp.
package browsertests
