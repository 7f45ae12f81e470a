package main

import (
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// adminTrashCmd lists and restores what the trash keeps (metad's
// --trash-days).
func adminTrashCmd(o *adminOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trash",
		Short: "List what the trash keeps, and restore from it",
		Long: `With metad's --trash-days N (flyfs server --trash-days), files that lose their
last name (rm, a rename over them, an S3 DELETE or overwrite outside versioned
buckets) and trees removed whole go to /.flyfs-trash instead of being
collected, and are purged N days later. 'list' shows them with where they
were; 'restore' moves them back.`,
	}
	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List the trash, oldest first: id, when, size, and the path it was removed from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, fs, done, err := o.dial(cmd, nil, o.timeout)
			if err != nil {
				return err
			}
			defer done()
			es, _, err := fs.Meta().TrashList(ctx)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if es == nil {
					es = []metaapi.TrashEntry{}
				}
				return enc.Encode(es)
			}
			if len(es) == 0 {
				fmt.Fprintln(out, "The trash is empty.")
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tREMOVED\tSIZE\tPATH")
			for _, e := range es {
				p := e.Path
				if e.Type == metaapi.TypeDir {
					p += "/"
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", e.Ino, time.Unix(0, e.At).UTC().Format(time.DateTime), adminBytes(e.Length), p)
			}
			return tw.Flush()
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print the entries as JSON")
	var to, under string
	restore := &cobra.Command{
		Use:   "restore [ID...]",
		Short: "Move entries back where they were (or into --to DIR), by id or everything removed from under --path",
		Long: `Restore trash entries by their id (from 'list') to where they were removed
from, or into the directory --to DIR under their own names. --path PREFIX
restores everything removed from PREFIX or below it, directories before what
was in them. A name that is taken again, or a directory that is gone, is
reported and that entry stays in the trash.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if (len(args) == 0) == (under == "") {
				return fmt.Errorf("name the entries to restore by id, or give --path (not both)")
			}
			ctx, fs, done, err := o.dial(cmd, nil, o.timeout)
			if err != nil {
				return err
			}
			defer done()
			m := fs.Meta()
			es, _, err := m.TrashList(ctx)
			if err != nil {
				return err
			}
			byIno := map[uint64]metaapi.TrashEntry{}
			for _, e := range es {
				byIno[e.Ino] = e
			}
			var picked []metaapi.TrashEntry
			for _, a := range args {
				ino, err := strconv.ParseUint(a, 10, 64)
				if err != nil {
					return fmt.Errorf("%q is not a trash entry id", a)
				}
				e, ok := byIno[ino]
				if !ok {
					return fmt.Errorf("no trash entry %d (see 'flyfs admin trash list')", ino)
				}
				picked = append(picked, e)
			}
			if under != "" {
				prefix := strings.TrimSuffix(path.Clean("/"+under), "/")
				for _, e := range es {
					if e.Path == prefix || strings.HasPrefix(e.Path, prefix+"/") {
						picked = append(picked, e)
					}
				}
				if len(picked) == 0 {
					return fmt.Errorf("nothing in the trash was removed from %s", prefix)
				}
			}
			// Parents first: a directory before what was in it.
			sort.SliceStable(picked, func(i, j int) bool { return strings.Count(picked[i].Path, "/") < strings.Count(picked[j].Path, "/") })
			var toIno uint64
			if to != "" {
				in, err := fs.Stat(ctx, to)
				if err != nil {
					return err
				}
				toIno = in.ID
			}
			failed := 0
			for _, e := range picked {
				name := ""
				if toIno != 0 {
					name = path.Base(e.Path)
				}
				where, err := m.TrashRestore(ctx, e.Ino, toIno, name)
				if err != nil {
					failed++
					fmt.Fprintf(cmd.ErrOrStderr(), "%d %s: %v\n", e.Ino, e.Path, err)
					continue
				}
				if toIno != 0 {
					where = strings.TrimSuffix(to, "/") + "/" + where
				}
				fmt.Fprintf(cmd.OutOrStdout(), "restored %s\n", where)
			}
			var result error
			if failed > 0 {
				result = fmt.Errorf("%d of %d entries were not restored", failed, len(picked))
			}
			what := fmt.Sprintf("restore %d trash entries", len(picked))
			if under != "" {
				what += " removed from " + under
			}
			o.audit(cmd, what, result)
			return result
		},
	}
	restore.Flags().StringVar(&to, "to", "", "restore into this directory instead of where they were")
	restore.Flags().StringVar(&under, "path", "", "restore everything removed from this path or below it")
	var yes bool
	empty := &cobra.Command{
		Use:   "empty",
		Short: "Remove everything in the trash for good now, to free its space (asks first; --yes: does not)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, fs, done, err := o.dial(cmd, nil, o.timeout)
			if err != nil {
				return err
			}
			defer done()
			es, _, err := fs.Meta().TrashList(ctx)
			if err != nil {
				return err
			}
			if !yes {
				var bytes uint64
				for _, e := range es {
					bytes += e.Length
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%d entries (%s in their top files) go for good. Continue? [y/N] ", len(es), adminBytes(bytes))
				var answer string
				fmt.Fscanln(cmd.InOrStdin(), &answer)
				if answer != "y" && answer != "yes" {
					return fmt.Errorf("nothing removed")
				}
			}
			n, err := fs.Meta().TrashEmpty(ctx)
			o.audit(cmd, fmt.Sprintf("empty the trash (%d entries)", len(es)), err)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "emptied the trash: %d entries in %d hour directories go to GC\n", len(es), n)
			return nil
		},
	}
	empty.Flags().BoolVar(&yes, "yes", false, "do not ask for confirmation")
	cmd.AddCommand(list, restore, empty)
	return cmd
}
