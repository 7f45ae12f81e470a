package kv

import "testing"

func TestKeyspacePrefixesDoNotOverlap(t *testing.T) {
	if a, b, found := overlaps(Keyspace); found {
		t.Fatalf("%q (%s) and %q (%s) overlap", a.Prefix, a.Owner, b.Prefix, b.Owner)
	}
	if _, _, found := overlaps([]Space{{Prefix: "S3K/"}, {Prefix: "S3"}}); !found {
		t.Fatal("an overlap went unnoticed")
	}
}

func TestTagRefusesAnUnregisteredPrefix(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("an unregistered prefix was handed out")
		}
	}()
	Tag("NOPE")
}
