package erprint

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"er/internal/analysis"
)

// mapfile and ifreq, two of the Oracle manual's miscellaneous commands.
//
// mapfile writes the link-order file of a load object: its functions, hottest first by the current
// sort metric, as the section names that gcc -ffunction-sections gives them, one a line, which the
// gold linker takes as --section-ordering-file (docs/output.md, "mapfile"). On Solaris it was a
// mapfile for ld's -M; GNU ld 2.40 has no section ordering option, gold has.

// mapfile writes the link-order file of load object args[0] to the file args[1] ("-": the output).
func (s *session) mapfile(args []string) error {
	obj, file := args[0], args[1]
	p, err := s.profile()
	if err != nil {
		return err
	}
	o := findObject(p, obj)
	if o < 0 {
		var names []string
		for i, ob := range p.Objects {
			if i > 0 && ob.Kind == "elf" {
				names = append(names, ob.Name)
			}
		}
		return usagef("mapfile: no load object %q in the experiments; the objects with functions: %s (lobjects lists them)", obj, strings.Join(names, ", "))
	}
	ob := p.Objects[o]
	if ob.Kind != "elf" {
		return usagef("mapfile: %s is not an ELF object of the experiments (%s): it has no sections to order", ob.Name, kindOf(ob))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Section ordering file for %s, written by er print's mapfile command:\n", ob.Path)
	fmt.Fprintf(&b, "# its functions by %s, as the function list sorts them, under the current selection.\n", s.sortItem.title(s.ms))
	fmt.Fprintf(&b, "# Compile with gcc -ffunction-sections and link with gold: -fuse-ld=gold -Wl,--section-ordering-file=%s\n", mapfileName(file))
	n := 0
	for _, f := range s.sortedFunctions(p) {
		fn := &p.Functions[f]
		if fn.Object != o || fn.Kind != analysis.FuncSymbol {
			continue
		}
		fmt.Fprintf(&b, ".text.%s\n", fn.Name)
		if fn.Name == "main" || strings.HasPrefix(fn.Name, "_GLOBAL__sub_I_") { // gcc -O2 puts them there
			fmt.Fprintf(&b, ".text.startup.%s\n", fn.Name)
		}
		n++
	}
	if n == 0 {
		return usagef("mapfile: no function of %s is in the profile under the current selection", ob.Name)
	}
	if file == "-" {
		s.printf("%s", b.String())
		return nil
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("mapfile: %v", err)
	}
	if s.text() {
		s.printf("Wrote the order of %d functions of %s to %s\n", n, ob.Name, file)
	}
	return nil
}

// mapfileName is how the file is named in the comment's link command.
func mapfileName(file string) string {
	if file == "-" {
		return "FILE"
	}
	return file
}

func kindOf(o analysis.Object) string {
	if o.Kind == "" {
		return "no symbols were archived"
	}
	return o.Kind
}

// findObject finds a load object by its name (<libc.so.6>), base name or path; -1 when none.
func findObject(p *analysis.Profile, name string) int {
	for i, o := range p.Objects {
		if i == 0 {
			continue
		}
		if o.Name == name || o.Path == name || o.Name == "<"+name+">" || filepath.Base(o.Path) == name {
			return i
		}
	}
	return -1
}

// ifreq is the instruction-frequency report, made from count data (the Oracle collector's -c,
// which counts each instruction by instrumenting the binary). er's collector counts no
// instructions: say so, as gprofng does, and what er has instead.
func (s *session) ifreq(_ []string) error {
	s.printf("\nInstruction frequency data was not recorded: it needs count data (the Oracle collector's -c on, which\n")
	s.printf("counts every instruction by instrumenting the binary), and er collect records none. For where the\n")
	s.printf("instructions ran, see pcs and disasm; with hardware counters (-h insts or cycles), their metrics there.\n\n")
	return nil
}
