// Command gen writes the files generated from internal/tracedef's definition (go generate ./internal/tracedef).
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"er/internal/tracedef"
)

func main() {
	root := filepath.Join("..", "..") // go generate runs in internal/tracedef
	c, err := tracedef.Trace.C()
	if err == nil {
		err = os.WriteFile(filepath.Join(root, tracedef.CFile), c, 0o644)
	}
	var g []byte
	if err == nil {
		g, err = tracedef.Trace.Go()
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(root, tracedef.GoFile), g, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tracedef/gen:", err)
		os.Exit(1)
	}
}
