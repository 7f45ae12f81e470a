package main

import (
	"fmt"

	"github.com/flyfs/flyfs/storaged/engine"
)

const segmentHelp = `checksum granularity of new disks: a power of two from 4KiB to 64KiB. A read reads and verifies whole segments; each segment's CRC takes 4 bytes of the storage service's memory (4KiB: 0.1% of the data stored). An existing disk keeps its own`

// parseSegment turns --checksum-segment into bytes; empty is 0, the
// engine's default.
func parseSegment(s string) (int, error) {
	n, err := parseSize("--checksum-segment", s)
	if err != nil || n == 0 {
		return 0, err
	}
	if !engine.ValidSegmentSize(n) {
		return 0, fmt.Errorf("--checksum-segment %s: want a power of two from 4KiB to 64KiB", s)
	}
	return int(n), nil
}
