package snapshot

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	metadv1 "metad/proto/metadv1"
)

// Each reads the rest of the file and calls fn with each record, in file order, on the calling
// goroutine; it returns nil once the whole file verified (what Next's io.EOF says), fn's first
// error, or the file's. A record passed to fn is fn's to keep.
//
// A chunked file's chunks are decoded by up to workers goroutines at once while fn runs, each
// chunk's checksum verified before any of its records is decoded; at most workers+2 chunks are in
// memory. A record is passed to fn only after every record before it, and never after an error
// in a record or chunk before it, so what fn sees and the error returned are those of Next. A
// file of FileVersionWhole, or workers < 2, is read with NextRaw on the calling goroutine. Each
// returns only after every goroutine it started has ended.
func (r *Reader) Each(workers int, fn func(*metadv1.Record) error) error {
	return r.EachDecoded(workers, 0, nil, func(rec *metadv1.Record, _ any) error { return fn(rec) })
}

// Decoder decodes the encoding of one record without its protobuf message, on the goroutine that
// decodes the record's chunk: (v, true, nil) is the record as v, (nil, false, nil) declines it
// (it is decoded with proto), and an error is what is wrong with it.
type Decoder func(raw []byte) (v any, ok bool, err error)

// EachDecoded is Each with the records of kind k given first to dec: fn gets (nil, v) for a
// record dec decodes and (rec, nil) for every other record. A dec error fails the read as a
// damaged record (ErrCorrupt).
func (r *Reader) EachDecoded(workers int, k Kind, dec Decoder, fn func(*metadv1.Record, any) error) error {
	if r.version == FileVersionWhole || workers < 2 || r.done || r.chunkLeft > 0 {
		for {
			kind, b, err := r.NextRaw()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			if dec != nil && kind == k {
				v, ok, err := dec(b)
				if err != nil {
					return fmt.Errorf("snapshot: record %d (ending at byte %d): %v: %w", r.records-1, r.n, err, ErrCorrupt)
				}
				if ok {
					if err := fn(nil, v); err != nil {
						return err
					}
					continue
				}
			}
			rec := &metadv1.Record{}
			if err := r.unmarshal(b, rec); err != nil {
				return err
			}
			if err := fn(rec, nil); err != nil {
				return err
			}
		}
	}
	quit := make(chan struct{})
	jobs := make(chan *chunkJob, workers)
	order := make(chan *chunkJob, workers+1)
	var wg sync.WaitGroup
	wg.Add(1 + workers)
	go func() { // the reader: chunks in file order, to the workers and, in order, to fn
		defer wg.Done()
		defer close(jobs)
		defer close(order)
		for {
			job := &chunkJob{done: make(chan struct{}), base: r.records, kind: k, dec: dec}
			more, err := r.nextChunk()
			if err == nil && more {
				job.raw, job.count, job.index, job.at = append([]byte(nil), r.chunk...), r.chunkLeft, r.chunks-1, r.chunkStart
				r.records += r.chunkLeft // the next chunk's records are numbered after these
				r.chunkLeft = 0
			} else {
				job.err, job.end = err, true
				close(job.done)
			}
			select {
			case order <- job:
			case <-quit:
				return
			}
			if job.end {
				return
			}
			select {
			case jobs <- job:
			case <-quit:
				return
			}
		}
	}()
	for range workers {
		go func() {
			defer wg.Done()
			for job := range jobs {
				job.decode()
				close(job.done)
			}
		}()
	}
	stop := func(err error) error {
		close(quit)
		for range order { // the reader returns at quit, closing order and jobs, and the workers end
		}
		wg.Wait()
		return err
	}
	for job := range order {
		<-job.done
		if job.end {
			wg.Wait() // the reader has returned, and closed jobs: the workers end
			if job.err != nil {
				return job.err
			}
			err := r.finish()
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		for i, rec := range job.recs {
			if !r.count(job.kinds[i]) {
				return stop(fmt.Errorf("snapshot: chunk %d (at byte %d): record %d has no known kind: %w", job.index, job.at,
					job.base+uint64(i), ErrCorrupt))
			}
			if err := fn(rec, job.vals[i]); err != nil {
				return stop(err)
			}
		}
		if job.err != nil {
			return stop(job.err)
		}
	}
	return stop(errors.New("snapshot: the chunk reader ended early"))
}

// chunkJob is one chunk of a file Each reads: its verified bytes and record count, where it is,
// and, once done is closed, its records (as messages, or as dec made them) and their kinds,
// decoded up to the first bad one (err).
type chunkJob struct {
	raw   []byte
	count uint64
	index int64  // the chunk's index in the file
	at    int64  // its first byte
	base  uint64 // the file index of its first record
	done  chan struct{}
	end   bool    // no chunk: the end marker (err nil) or a failure to read one (err)
	kind  Kind    // the kind dec decodes
	dec   Decoder // nil: every record with proto
	recs  []*metadv1.Record
	vals  []any // dec's record where recs has nil
	kinds []Kind
	err   error
}

// decode decodes the job's records.
func (j *chunkJob) decode() {
	b := j.raw
	j.recs, j.vals, j.kinds = make([]*metadv1.Record, 0, j.count), make([]any, 0, j.count), make([]Kind, 0, j.count)
	for i := uint64(0); i < j.count; i++ {
		n, k := protowire.ConsumeBytes(b)
		if k < 0 || len(n) == 0 {
			j.err = fmt.Errorf("snapshot: chunk %d (at byte %d): frame %d of it is malformed: %w", j.index, j.at, i, ErrCorrupt)
			return
		}
		b = b[k:]
		num, _, t := protowire.ConsumeTag(n)
		if t < 0 {
			j.err = fmt.Errorf("snapshot: record %d (chunk %d at byte %d) has no known kind: %w", j.base+i, j.index, j.at, ErrCorrupt)
			return
		}
		if j.dec != nil && num == j.kind {
			v, ok, err := j.dec(n)
			if err != nil {
				j.err = fmt.Errorf("snapshot: record %d (chunk %d at byte %d): %v: %w", j.base+i, j.index, j.at, err, ErrCorrupt)
				return
			}
			if ok {
				j.recs, j.vals, j.kinds = append(j.recs, nil), append(j.vals, v), append(j.kinds, num)
				continue
			}
		}
		rec := &metadv1.Record{}
		if err := proto.Unmarshal(n, rec); err != nil {
			j.err = fmt.Errorf("snapshot: record %d (chunk %d at byte %d): %v: %w", j.base+i, j.index, j.at, err, ErrCorrupt)
			return
		}
		if rec.Record == nil {
			j.err = fmt.Errorf("snapshot: record %d (chunk %d at byte %d) has no known kind: %w", j.base+i, j.index, j.at, ErrCorrupt)
			return
		}
		j.recs, j.vals, j.kinds = append(j.recs, rec), append(j.vals, nil), append(j.kinds, num)
	}
	if len(b) != 0 {
		j.err = fmt.Errorf("snapshot: chunk %d (at byte %d): %d bytes after its last record: %w", j.index, j.at, len(b), ErrCorrupt)
	}
}
