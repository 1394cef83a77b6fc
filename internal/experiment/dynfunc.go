package experiment

import "sort"

// Dynamic functions that the program generated and named through the collector API
// (collector_func_load, preload/c/dynfunc.c): records of the stacks file, read into
// Data.DynFuncs and the mappings that name their code (DynamicPath).

// DynFunc is a function the program generated: its code [Addr, Addr+Size) from Load to Unload (ns
// since the start; -1 while it lasts).
type DynFunc struct {
	Pid                 uint32
	Addr                uint64
	Size                uint32
	Name, Alias, Source string
	Lines               []DynLine // offsets ascending
	Bytes               []byte    // its instructions at the load (dyntext); nil where not recorded
	Load, Unload        int64
}

// DynLine says that the instructions from offset Off of a function on are of source line Line.
type DynLine struct{ Off, Line uint32 }

// LineAt returns the source line of offset off of the function, 0 where unknown.
func (f *DynFunc) LineAt(off uint64) int {
	line := 0
	for _, l := range f.Lines {
		if uint64(l.Off) > off {
			break
		}
		line = int(l.Line)
	}
	return line
}

// dynRecord reads a record of the stacks file of process pid about a generated function.
func (tr *traceReader) dynRecord(r *traceRec, pid uint32, sk *skipped) {
	size := sizeofRec + len(r.body)
	switch r.kind {
	case recDynFunc:
		if size < sizeofRecDynFunc {
			sk.malformed++
			return
		}
		addr, n, nlines := r.u64(recDynFuncAddr), r.u32(recDynFuncSize), uint64(r.u32(recDynFuncNLines))
		nl, al, sl := int(r.u16(recDynFuncNameLen)), int(r.u16(recDynFuncAliasLen)), int(r.u16(recDynFuncSrcLen))
		if n == 0 || nl == 0 || addr+uint64(n) < addr || addr+uint64(n) > SymbolicBase ||
			nlines*sizeofDynLine+uint64(nl+al+sl) > uint64(size-sizeofRecDynFunc) {
			sk.malformed++
			return
		}
		f := DynFunc{Pid: pid, Addr: addr, Size: n, Load: max(tr.t(r.time), 0), Unload: -1}
		t := r.tail(sizeofRecDynFunc)
		for i := range nlines {
			e := t[i*sizeofDynLine:]
			l := DynLine{Off: le.Uint32(e[dynLineOff:]), Line: le.Uint32(e[dynLineLine:])}
			if len(f.Lines) > 0 && l.Off <= f.Lines[len(f.Lines)-1].Off {
				continue // offsets must ascend: a later entry of the same offset is dropped
			}
			f.Lines = append(f.Lines, l)
		}
		t = t[nlines*sizeofDynLine:]
		f.Name, f.Alias, f.Source = string(t[:nl]), string(t[nl:nl+al]), string(t[nl+al:nl+al+sl])
		tr.d.DynFuncs = append(tr.d.DynFuncs, f)
	case recDynBytes:
		if size < sizeofRecDynBytes {
			sk.malformed++
			return
		}
		addr, off, n := r.u64(recDynBytesAddr), uint64(r.u32(recDynBytesOff)), uint64(r.u32(recDynBytesN))
		f := tr.liveDynFunc(pid, addr)
		if f == nil || n > uint64(size-sizeofRecDynBytes) || off+n > uint64(f.Size) {
			sk.malformed++
			return
		}
		if f.Bytes == nil {
			f.Bytes = make([]byte, f.Size)
		}
		copy(f.Bytes[off:], r.tail(sizeofRecDynBytes)[:n])
	case recDynUnload:
		if size < sizeofRecDynUnload {
			sk.malformed++
			return
		}
		if f := tr.liveDynFunc(pid, r.u64(recDynUnloadAddr)); f != nil {
			f.Unload = max(tr.t(r.time), f.Load)
		}
	}
}

// liveDynFunc returns the last generated function of process pid loaded at addr and not unloaded.
func (tr *traceReader) liveDynFunc(pid uint32, addr uint64) *DynFunc {
	fs := tr.d.DynFuncs
	for i := len(fs) - 1; i >= 0; i-- {
		if f := &fs[i]; f.Pid == pid && f.Addr == addr && f.Unload == -1 {
			return f
		}
	}
	return nil
}

// dynMappings are the mappings that name the generated functions' code.
func dynMappings(fs []DynFunc) []Mapping {
	out := make([]Mapping, 0, len(fs))
	for i := range fs {
		f := &fs[i]
		out = append(out, Mapping{Pid: f.Pid, Start: f.Addr, End: f.Addr + uint64(f.Size), Path: DynamicPath, Func: f.Name,
			Source: f.Source, LoadTime: f.Load, UnloadTime: f.Unload})
	}
	return out
}

// EncodeDynText renders functions fs of process pid as the dyntext file: a trace file
// (docs/trace-format.md) of dynamic-function, bytes and unload records, which er collect writes
// from a runtime's jitdump. start is the experiment's start (StartPerfNS); the functions' Load
// and Unload are relative to it, as the reader's are.
func EncodeDynText(pid uint32, start int64, fs []DynFunc) []byte {
	const blockSize = 64 << 10
	b := make([]byte, traceHeaderSize)
	copy(b, traceMagic)
	le.PutUint32(b[fileHeaderVersion:], traceVersion)
	le.PutUint32(b[fileHeaderKind:], fileDyn)
	le.PutUint32(b[fileHeaderBlockSize:], blockSize)
	le.PutUint32(b[fileHeaderPid:], pid)
	le.PutUint64(b[fileHeaderStartNS:], uint64(start))
	var blk []byte
	put := func(kind uint8, t int64, body []byte) {
		for len(body)%8 != 0 {
			body = append(body, 0)
		}
		n := sizeofRec + len(body)
		if len(blk)+n > blockSize {
			b = append(b, blk...)
			b = append(b, make([]byte, blockSize-len(blk))...)
			blk = blk[:0]
		}
		blk = le.AppendUint16(blk, uint16(n/8))
		blk = append(blk, kind, 0)
		blk = le.AppendUint32(blk, 0)
		blk = le.AppendUint64(blk, uint64(start+t))
		blk = append(blk, body...)
	}
	type ev struct {
		t      int64
		unload bool
		i      int
	}
	// In time order, loads before unloads at one time, so a reused address reads right.
	evs := make([]ev, 0, 2*len(fs))
	for i := range fs {
		evs = append(evs, ev{fs[i].Load, false, i})
		if fs[i].Unload >= 0 {
			evs = append(evs, ev{fs[i].Unload, true, i})
		}
	}
	sort.SliceStable(evs, func(a, c int) bool {
		if evs[a].t != evs[c].t {
			return evs[a].t < evs[c].t
		}
		return evs[a].unload && !evs[c].unload
	})
	for _, e := range evs {
		f := &fs[e.i]
		if e.unload {
			put(recDynUnload, e.t, le.AppendUint64(nil, f.Addr))
			continue
		}
		name := f.Name
		if len(name) > 0xffff {
			name = name[:0xffff]
		}
		body := le.AppendUint64(nil, f.Addr)
		body = le.AppendUint32(body, f.Size)
		body = le.AppendUint32(body, 0)
		body = le.AppendUint16(body, uint16(len(name)))
		body = le.AppendUint16(body, 0)
		body = le.AppendUint16(body, 0)
		body = le.AppendUint16(body, 0)
		put(recDynFunc, e.t, append(body, name...))
		for off := 0; off < len(f.Bytes); off += 16 << 10 {
			part := f.Bytes[off:min(off+16<<10, len(f.Bytes))]
			body := le.AppendUint64(nil, f.Addr)
			body = le.AppendUint32(body, uint32(off))
			body = le.AppendUint32(body, uint32(len(part)))
			put(recDynBytes, e.t, append(body, part...))
		}
	}
	if len(blk) > 0 {
		b = append(b, blk...)
		b = append(b, make([]byte, blockSize-len(blk))...)
	}
	return b
}
