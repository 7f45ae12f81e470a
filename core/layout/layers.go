package layout

// Shared data. A file's bytes are its own chunks (the chunk ids of its data
// id) over read-only layers it shares with other files: a clone (a zero-copy
// copy, a snapshot) freezes the source's own chunks into a layer and both
// files read through it. Chunk i of a file is its own chunk i if that exists,
// else chunk i of the first layer, in order, that holds it, showing only the
// layer's bytes below the layer's Limit (a truncate lowers the limits, so an
// extension reads zeros rather than what a layer held there). The first write
// to a chunk the file does not own copies the layer's visible bytes into the
// own chunk first (at the chain's head, under the chunk's lock), so layers
// never change. A file and its layers share one layout: chunk i of every
// layer is on the same chain as the file's chunk i.

// Layer is one read-only layer beneath a file: the data id whose chunks it
// is, and the file offset where its bytes end for this file.
type Layer struct {
	ID    uint64 `cbor:"1,keyasint"`
	Limit uint64 `cbor:"2,keyasint,omitempty"`
}

// LayerChunk is a layer's chunk that a read or first write of a file's chunk
// falls back to: its id, and how many of its bytes the file sees.
type LayerChunk struct {
	Chunk ChunkID `cbor:"1,keyasint"`
	Len   uint32  `cbor:"2,keyasint,omitempty"`
}

// MaxLayers bounds how many layers a file reads through (a clone of a file
// already at the bound is refused: copy its bytes instead).
const MaxLayers = 32

// LayerChunks returns, in order, the layer chunks that chunk idx of a file
// with chunkSize and layers falls back to; layers whose limit ends before
// the chunk are left out.
func LayerChunks(layers []Layer, idx uint64, chunkSize uint32) []LayerChunk {
	if len(layers) == 0 || chunkSize == 0 {
		return nil
	}
	start := idx * uint64(chunkSize)
	var out []LayerChunk
	for _, l := range layers {
		if l.Limit <= start {
			continue
		}
		out = append(out, LayerChunk{Chunk: MakeChunkID(l.ID, idx), Len: uint32(min(l.Limit-start, uint64(chunkSize)))})
	}
	return out
}

// CutLayers lowers every layer's limit to size (a truncate to size): it
// returns the layers that still show bytes and those left with none, whose
// references the caller releases.
func CutLayers(layers []Layer, size uint64) (kept []Layer, dropped []Layer) {
	for _, l := range layers {
		l.Limit = min(l.Limit, size)
		if l.Limit == 0 {
			dropped = append(dropped, l)
			continue
		}
		kept = append(kept, l)
	}
	return kept, dropped
}
