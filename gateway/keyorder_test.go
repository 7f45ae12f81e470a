package gateway

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/flyfs/flyfs/core/api/metaapi"
)

// TestKeyOrder runs the cases of testdata/keyorder. Commands:
//
//	order: one directory's entries in name order, one a line ("dir NAME",
//	  "file NAME" or "symlink NAME"; "page" ends a page), through keyOrder
//	  page by page; prints each entry's key as it is handed out and, after a
//	  page, the directories still waiting.
//	walk [page=N]: the keys of a bucket, one a line (a key ending in '/' is a
//	  marker; "NAME/ implicit" is a directory without one), walked as the
//	  gateway walks them, keyOrder in every directory, N entries a page;
//	  prints the keys listed.
//	rollup prefix=P delim=D: keys, one a line; prints the common prefix
//	  each rolls up into.
//
// order and walk also check that what they print is in byte order.
func TestKeyOrder(t *testing.T) {
	datadriven.RunTest(t, "testdata/keyorder", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "order":
			return runOrder(t, d)
		case "walk":
			return runWalk(t, d)
		case "rollup":
			return runRollup(t, d)
		}
		d.Fatalf(t, "unknown command %q", d.Cmd)
		return ""
	})
}

func runOrder(t *testing.T, d *datadriven.TestData) string {
	var pages [][]metaapi.DirEntry
	var page []metaapi.DirEntry
	last := ""
	for _, line := range inputLines(d.Input) {
		if line == "page" {
			pages, page = append(pages, page), nil
			continue
		}
		kind, name, _ := strings.Cut(line, " ")
		typ, ok := map[string]metaapi.Type{"dir": metaapi.TypeDir, "file": metaapi.TypeFile, "symlink": metaapi.TypeSymlink}[kind]
		if !ok || name == "" || strings.Contains(name, "/") {
			d.Fatalf(t, "bad entry %q", line)
		}
		if name <= last {
			d.Fatalf(t, "entry %q is not after %q: a directory's entries come in name order", name, last)
		}
		last = name
		page = append(page, metaapi.DirEntry{Name: name, Type: typ})
	}
	pages = append(pages, page)

	var out, keys []string
	var waiting []metaapi.DirEntry
	for i, p := range pages {
		var ordered []metaapi.DirEntry
		ordered, waiting = keyOrder(waiting, p, i == len(pages)-1)
		for _, e := range ordered {
			keys = append(keys, entryKey(e))
			out = append(out, entryKey(e))
		}
		if len(waiting) > 0 {
			var w []string
			for j := len(waiting) - 1; j >= 0; j-- {
				w = append(w, entryKey(waiting[j]))
			}
			out = append(out, "(waiting "+strings.Join(w, " ")+")")
		}
	}
	checkByteOrder(t, d, keys)
	if len(out) == 0 {
		return "(none)"
	}
	return strings.Join(out, "\n")
}

func entryKey(e metaapi.DirEntry) string {
	if e.Type == metaapi.TypeDir {
		return dirKey(e)
	}
	return e.Name
}

// treeDir is a directory of a walk case.
type treeDir struct {
	marker bool
	dirs   map[string]*treeDir
	files  map[string]bool
}

func runWalk(t *testing.T, d *datadriven.TestData) string {
	pageSize := 0
	d.MaybeScanArgs(t, "page", &pageSize)
	root := &treeDir{dirs: map[string]*treeDir{}, files: map[string]bool{}}
	var objects []string
	for _, line := range inputLines(d.Input) {
		key, implicit := strings.CutSuffix(line, " implicit")
		segs := strings.Split(strings.TrimSuffix(key, "/"), "/")
		isDir := strings.HasSuffix(key, "/")
		dir := root
		for i, s := range segs {
			if s == "" {
				d.Fatalf(t, "bad key %q", line)
			}
			if i == len(segs)-1 && !isDir {
				if dir.dirs[s] != nil {
					d.Fatalf(t, "%q is a directory already", key)
				}
				dir.files[s] = true
				break
			}
			if dir.files[s] {
				d.Fatalf(t, "%q is a file already", strings.Join(segs[:i+1], "/"))
			}
			if dir.dirs[s] == nil {
				dir.dirs[s] = &treeDir{dirs: map[string]*treeDir{}, files: map[string]bool{}}
			}
			dir = dir.dirs[s]
		}
		if isDir && !implicit {
			dir.marker = true
		}
		if !implicit {
			objects = append(objects, key)
		}
	}

	var listed []string
	var walk func(dir *treeDir, dk string)
	walk = func(dir *treeDir, dk string) {
		var ents []metaapi.DirEntry
		for name := range dir.dirs {
			ents = append(ents, metaapi.DirEntry{Name: name, Type: metaapi.TypeDir})
		}
		for name := range dir.files {
			ents = append(ents, metaapi.DirEntry{Name: name, Type: metaapi.TypeFile})
		}
		sort.Slice(ents, func(i, j int) bool { return ents[i].Name < ents[j].Name })
		n := len(ents)
		if pageSize > 0 {
			n = pageSize
		}
		var waiting []metaapi.DirEntry
		for start := 0; ; start += n {
			page := ents[min(start, len(ents)):min(start+n, len(ents))]
			end := start+n >= len(ents)
			var ordered []metaapi.DirEntry
			ordered, waiting = keyOrder(waiting, page, end)
			for _, e := range ordered {
				if e.Type != metaapi.TypeDir {
					listed = append(listed, dk+e.Name)
					continue
				}
				sub := dir.dirs[e.Name]
				if sub.marker {
					listed = append(listed, dk+dirKey(e))
				}
				walk(sub, dk+dirKey(e))
			}
			if end {
				return
			}
		}
	}
	walk(root, "")

	checkByteOrder(t, d, listed)
	slices.Sort(objects)
	if !slices.Equal(listed, objects) {
		t.Errorf("%s: the walk listed %q, the keys are %q", d.Pos, listed, objects)
	}
	if len(listed) == 0 {
		return "(none)"
	}
	return strings.Join(listed, "\n")
}

func runRollup(t *testing.T, d *datadriven.TestData) string {
	var prefix, delim string
	d.ScanArgs(t, "prefix", &prefix)
	d.ScanArgs(t, "delim", &delim)
	var out []string
	for _, key := range inputLines(d.Input) {
		if cp, ok := commonPrefixOf(prefix, delim, key); ok {
			out = append(out, key+" -> "+cp)
		} else {
			out = append(out, key+" -> no common prefix")
		}
	}
	return strings.Join(out, "\n")
}

func inputLines(input string) []string {
	var out []string
	for _, l := range strings.Split(input, "\n") {
		if l = strings.TrimRight(l, " "); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func checkByteOrder(t *testing.T, d *datadriven.TestData, keys []string) {
	for i := 1; i < len(keys); i++ {
		if keys[i-1] >= keys[i] {
			t.Errorf("%s: %q comes before %q, out of key order", d.Pos, keys[i-1], keys[i])
		}
	}
}
