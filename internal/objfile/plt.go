package objfile

import (
	"bytes"
	"debug/elf"
	"fmt"

	"er/internal/experiment"
)

// x86-64 relocation types that fill a GOT slot a PLT stub jumps through.
const (
	rX86_64GlobDat   = 6
	rX86_64JumpSlot  = 7
	rX86_64IRelative = 37
)

// pltSectionNames are the sections holding PLT stubs, in the layouts GNU ld
// produces: the lazy .plt, the IBT/-z now .plt.sec, .plt.got for functions
// also referenced through the GOT, and .iplt in some static links.
var pltSectionNames = []string{".plt", ".plt.sec", ".plt.got", ".iplt"}

// gotSlot is what a GOT slot a stub jumps through resolves to.
type gotSlot struct {
	name string
}

// pltSymbols names the x86-64 PLT stubs: each stub's jmp *disp(%rip) gives
// its GOT slot, whose JUMP_SLOT, GLOB_DAT or IRELATIVE relocation gives the
// function. Lazy-binding stubs that only push a .rela.plt index (the .plt
// beside a .plt.sec) are named from that index. funcs (sorted) names
// IRELATIVE targets; st and dyn are the .symtab and .dynsym symbols. Other machines have no PLT symbols.
func (f *File) pltSymbols(funcs []experiment.Symbol, st, dyn []elf.Symbol) ([]experiment.Symbol, error) {
	if f.elf.Machine != elf.EM_X86_64 || f.elf.Class != elf.ELFCLASS64 {
		return nil, nil
	}
	slots, relaPLT, err := f.gotSlots(funcs, st, dyn)
	if err != nil {
		return nil, err
	}
	var out []experiment.Symbol
	for _, name := range pltSectionNames {
		s := f.elf.Section(name)
		if s == nil || s.Type != elf.SHT_PROGBITS || s.Size == 0 {
			continue
		}
		data, err := s.Data()
		if err != nil {
			return nil, fmt.Errorf("objfile: %s: reading %s at offset %#x: %w", f.name, name, s.Offset, err)
		}
		ent := s.Entsize
		if ent == 0 || ent > uint64(len(data)) {
			ent = 16
			// Static links emit 8-byte "jmp *GOT; nop" stubs with no entry size.
			if len(data) >= 16 {
				if k, _ := decodeStub(data[8:16], 0); k == stubJump {
					ent = 8
				}
			}
		}
		for off := uint64(0); off+ent <= uint64(len(data)); off += ent {
			addr := s.Addr + off
			kind, v := decodeStub(data[off:off+ent], addr)
			var sym string
			switch kind {
			case stubHeader:
				sym = "<plt>"
			case stubJump:
				if g, ok := slots[v]; ok {
					sym = g.name + "@plt"
				}
			case stubPush:
				if v < uint64(len(relaPLT)) {
					if g, ok := slots[relaPLT[v]]; ok {
						sym = g.name + "@plt"
					}
				}
			}
			if sym != "" {
				out = append(out, experiment.Symbol{Name: sym, Addr: addr, Size: ent, Kind: experiment.SymPLT})
			}
		}
	}
	return out, nil
}

// gotSlots reads every RELA section and maps the GOT slots filled by
// JUMP_SLOT, GLOB_DAT and IRELATIVE relocations to the function's name. It
// also returns the GOT slot of each .rela.plt entry, in order, for the
// push-index stubs. st and dyn are the .symtab and .dynsym symbols.
func (f *File) gotSlots(funcs []experiment.Symbol, st, dyn []elf.Symbol) (map[uint64]gotSlot, []uint64, error) {
	slots := make(map[uint64]gotSlot)
	var relaPLT []uint64
	for _, s := range f.elf.Sections {
		if s.Type != elf.SHT_RELA || s.Entsize != 24 && s.Entsize != 0 {
			continue
		}
		data, err := s.Data()
		if err != nil {
			return nil, nil, fmt.Errorf("objfile: %s: reading %s at offset %#x: %w", f.name, s.Name, s.Offset, err)
		}
		var symtab []elf.Symbol
		if int(s.Link) < len(f.elf.Sections) && s.Link != 0 {
			switch f.elf.Sections[s.Link].Type {
			case elf.SHT_DYNSYM:
				symtab = dyn
			case elf.SHT_SYMTAB:
				symtab = st
			}
		}
		isPLT := s.Name == ".rela.plt"
		order := f.elf.ByteOrder
		for i := 0; i+24 <= len(data); i += 24 {
			off := order.Uint64(data[i:])
			info := order.Uint64(data[i+8:])
			addend := order.Uint64(data[i+16:])
			if isPLT {
				relaPLT = append(relaPLT, off)
			}
			typ, idx := uint32(info), info>>32
			var name string
			switch typ {
			case rX86_64JumpSlot, rX86_64GlobDat:
				if idx > 0 && idx <= uint64(len(symtab)) {
					name = symtab[idx-1].Name
				}
			case rX86_64IRelative:
				name = symbolNamed(funcs, addend)
			}
			if name != "" {
				if _, dup := slots[off]; !dup || isPLT {
					slots[off] = gotSlot{name: name}
				}
			}
		}
	}
	return slots, relaPLT, nil
}

// symbolNamed names the function at addr (an IFUNC resolver for an
// IRELATIVE relocation), or gives objdump's "*ABS*+0xADDR" form.
func symbolNamed(funcs []experiment.Symbol, addr uint64) string {
	lo, hi := 0, len(funcs)
	for lo < hi {
		m := (lo + hi) / 2
		if funcs[m].Addr < addr {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(funcs) && funcs[lo].Addr == addr {
		return funcs[lo].Name
	}
	return fmt.Sprintf("*ABS*+%#x", addr)
}

// Kinds of PLT stub.
const (
	stubUnknown = iota
	stubHeader  // PLT0: push GOT+8(%rip); jmp *GOT+16(%rip)
	stubJump    // jmp *disp(%rip): the value is the GOT slot's address
	stubPush    // push $index; jmp PLT0: the value is the .rela.plt index
)

var endbr64 = []byte{0xf3, 0x0f, 0x1e, 0xfa}

// decodeStub decodes the first instruction of a PLT entry at address addr,
// after an optional endbr64 and bnd prefix.
func decodeStub(b []byte, addr uint64) (kind int, value uint64) {
	i := 0
	if bytes.HasPrefix(b, endbr64) {
		i = len(endbr64)
	}
	if i < len(b) && b[i] == 0xf2 { // bnd prefix (MPX PLT)
		i++
	}
	if i+6 <= len(b) && b[i] == 0xff && b[i+1] == 0x35 {
		return stubHeader, 0
	}
	if i+6 <= len(b) && b[i] == 0xff && b[i+1] == 0x25 {
		disp := int32(uint32(b[i+2]) | uint32(b[i+3])<<8 | uint32(b[i+4])<<16 | uint32(b[i+5])<<24)
		return stubJump, addr + uint64(i+6) + uint64(int64(disp))
	}
	if i+5 <= len(b) && b[i] == 0x68 {
		return stubPush, uint64(uint32(b[i+1]) | uint32(b[i+2])<<8 | uint32(b[i+3])<<16 | uint32(b[i+4])<<24)
	}
	return stubUnknown, 0
}
