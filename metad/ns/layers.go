package ns

import (
	"errors"

	"github.com/flyfs/flyfs/core/layout"
)

// Layers: the frozen chunks files share (core/layout's shared data).
//
//	LAYR id(8, LE) -> layerRecord
//
// A layer's id is the data id of the file it was frozen from (often that
// file's inode id, which stays its inode's): no file owns those chunks any
// more, only layers. Its record counts the files whose Layers list
// it; the last file to let go (GC deleting it, a truncate cutting the layer
// away) deletes the record and queues the layer's chunks for deletion, as a
// GC file entry marked Layer.

var tagLayer = []byte("LAYR")

func layerKey(id uint64) []byte { return putID(withTag(tagLayer, 8), id) }

// layerRecord is one layer: how many files read through it, the layout its
// chunks are on, and the length of the file it was frozen from (for
// figures).
type layerRecord struct {
	Refs   uint32 `cbor:"1,keyasint"`
	Layout Layout `cbor:"2,keyasint"`
	Length uint64 `cbor:"3,keyasint,omitempty"`
}

// layer reads a layer's record with conflict tracking.
func (o *op) layer(id uint64) (*layerRecord, error) {
	v, found, err := o.tx.Get(o.ctx, layerKey(id))
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fail(ErrInvalid, "layer %d has no record", id)
	}
	rec := new(layerRecord)
	return rec, decode(v, rec)
}

// refLayers counts one more file reading through each of layers.
func (o *op) refLayers(layers []layout.Layer) error {
	for _, l := range layers {
		rec, err := o.layer(l.ID)
		if err != nil {
			return err
		}
		rec.Refs++
		o.tx.Set(layerKey(l.ID), encode(rec))
	}
	return nil
}

// unrefLayers counts one file fewer on each of layers; a layer left with
// none goes, its chunks queued for GC.
func (o *op) unrefLayers(layers []layout.Layer) error {
	for _, l := range layers {
		rec, err := o.layer(l.ID)
		if errors.Is(err, ErrInvalid) {
			continue // already gone: fsck reports the file that named it
		}
		if err != nil {
			return err
		}
		if rec.Refs > 1 {
			rec.Refs--
			o.tx.Set(layerKey(l.ID), encode(rec))
			continue
		}
		o.tx.Clear(layerKey(l.ID))
		lay := rec.Layout
		o.tx.Set(gcKey(gcFile, l.ID, o.now), encode(&gcEntry{Ino: l.ID, Type: TypeFile, RemovedAt: o.now, Length: rec.Length, Layer: &lay}))
	}
	return nil
}
