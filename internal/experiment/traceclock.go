package experiment

import (
	"errors"
	"fmt"
	"io"
	"io/fs"

	"er/internal/regfile"
)

// TraceClockNS returns the CPU time that the clock samples of the trace file file (a clocktrace)
// stand for, in ns; 0 when there is no such file. It reads the file a block at a time.
func TraceClockNS(file string) (int64, error) {
	f, _, err := regfile.Open(file)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	head := make([]byte, traceHeaderLen)
	if _, err := io.ReadFull(f, head); err != nil {
		return 0, fmt.Errorf("%s: reading the header: %v", file, err)
	}
	if string(head[fileHeaderMagic:fileHeaderMagic+len(traceMagic)]) != traceMagic || le.Uint32(head[fileHeaderKind:]) != fileClock {
		return 0, fmt.Errorf("%s: not a clock trace file", file)
	}
	blockSize, interval := int64(le.Uint32(head[fileHeaderBlockSize:])), int64(le.Uint64(head[fileHeaderParam:]))
	if blockSize < minBlockSize || blockSize%8 != 0 || blockSize > maxBlockSize {
		return 0, fmt.Errorf("%s: block size %d", file, blockSize)
	}
	block := make([]byte, blockSize)
	var ns int64
	for off := int64(traceHeaderSize); ; off += blockSize {
		n, err := f.ReadAt(block, off)
		if n < sizeofRec {
			if err == io.EOF || err == nil {
				return ns, nil
			}
			return ns, err
		}
		for p := 0; p+sizeofRec <= n; {
			w := le.Uint64(block[p:])
			size := int(uint16(w>>(8*recSize8))) * 8
			if w == 0 || size < sizeofRec || p+size > n {
				break
			}
			if uint8(w>>(8*recKind)) == recClock && size >= sizeofRecClock {
				ns += int64(le.Uint32(block[p+recClockCount:])) * interval
			}
			p += size
		}
	}
}
