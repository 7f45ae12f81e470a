package layout

import (
	"reflect"
	"testing"
)

func TestLayerChunks(t *testing.T) {
	const cs = 64 << 10
	layers := []Layer{{ID: 7, Limit: cs + 100}, {ID: 5, Limit: 3 * cs}, {ID: 3, Limit: 10}}
	for _, c := range []struct {
		name string
		idx  uint64
		want []LayerChunk
	}{
		{"every layer shows part of chunk 0", 0, []LayerChunk{{MakeChunkID(7, 0), cs}, {MakeChunkID(5, 0), cs}, {MakeChunkID(3, 0), 10}}},
		{"a limit inside the chunk shows its bytes below it", 1, []LayerChunk{{MakeChunkID(7, 1), 100}, {MakeChunkID(5, 1), cs}}},
		{"layers whose limit ends before the chunk are left out", 2, []LayerChunk{{MakeChunkID(5, 2), cs}}},
		{"past every limit: nothing to fall back to", 3, nil},
	} {
		if got := LayerChunks(layers, c.idx, cs); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: LayerChunks(%d) = %v, want %v", c.name, c.idx, got, c.want)
		}
	}
	if got := LayerChunks(nil, 0, cs); got != nil {
		t.Errorf("no layers: %v", got)
	}
}

func TestCutLayers(t *testing.T) {
	layers := []Layer{{ID: 7, Limit: 500}, {ID: 5, Limit: 100}, {ID: 3, Limit: 0}}
	kept, dropped := CutLayers(layers, 200)
	if want := []Layer{{7, 200}, {5, 100}}; !reflect.DeepEqual(kept, want) {
		t.Errorf("kept %v, want %v", kept, want)
	}
	if want := []Layer{{3, 0}}; !reflect.DeepEqual(dropped, want) {
		t.Errorf("dropped %v, want %v", dropped, want)
	}
	kept, dropped = CutLayers(layers, 0)
	if len(kept) != 0 || len(dropped) != 3 {
		t.Errorf("cut to 0: kept %v, dropped %v", kept, dropped)
	}
}
