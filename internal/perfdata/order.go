package perfdata

import (
	"cmp"
	"io"
	"slices"

	"er/internal/perfabi"
)

// Ordered reads every record of rd and passes each to fn in time order, as perf report does: the
// kernel writes each CPU's ring in order, and perf record writes the rings one after another, so
// records of one round of reads interleave in time. perf record ends each round with a
// FINISHED_ROUND record, and a record of one round is never older than those of the round
// before the previous one: at each FINISHED_ROUND, the records queued up to the newest time
// seen at the previous one are passed on, in time order (stable: ties keep the file's order).
// Records without a time (perf's own, and those of events without sample_id_all) are passed on at
// once, in the file's order; the FINISHED_ROUND records too. fn's error stops the reading.
func Ordered(rd *Reader, fn func(perfabi.Record) error) error {
	var queue []perfabi.Record
	var limit, newest uint64
	flush := func(upTo uint64) error {
		slices.SortStableFunc(queue, func(a, b perfabi.Record) int { return cmp.Compare(perfabi.Time(a), perfabi.Time(b)) })
		n := 0
		for n < len(queue) && perfabi.Time(queue[n]) <= upTo {
			if err := fn(queue[n]); err != nil {
				return err
			}
			queue[n] = nil
			n++
		}
		queue = append(queue[:0], queue[n:]...)
		return nil
	}
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			return flush(^uint64(0))
		}
		if err != nil {
			return err
		}
		t := perfabi.Time(rec)
		switch {
		case rec.Head().Type == RecordFinishedRound:
			if err := flush(limit); err != nil {
				return err
			}
			limit = newest
			if err := fn(rec); err != nil {
				return err
			}
		case t == 0:
			if err := fn(rec); err != nil {
				return err
			}
		default:
			newest = max(newest, t)
			queue = append(queue, rec)
		}
	}
}
