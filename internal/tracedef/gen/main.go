// Command gen writes the files generated from internal/tracedef's definitions (go generate ./internal/tracedef).
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"er/internal/tracedef"
)

func main() {
	root := filepath.Join("..", "..") // go generate runs in internal/tracedef
	for _, d := range tracedef.Defs {
		if err := write(root, d); err != nil {
			fmt.Fprintln(os.Stderr, "tracedef/gen:", err)
			os.Exit(1)
		}
	}
}

func write(root string, d *tracedef.Def) error {
	c, err := d.C()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, d.CFile), c, 0o644); err != nil {
		return err
	}
	g, err := d.Go()
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(root, d.GoFile), g, 0o644)
}
