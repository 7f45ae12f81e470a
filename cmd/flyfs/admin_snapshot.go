package main

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// adminSnapshotCmd makes, lists and deletes directory snapshots.
func adminSnapshotCmd(o *adminOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Make, list and delete read-only point-in-time copies of directory trees",
		Long: `A snapshot copies a directory tree at one moment without copying data: its files
share chunks with the live ones, and whichever side is written afterwards gets its
own copy of the chunks it changes. It lives in the tree's top directory (the
bucket, for S3) as /TOP/.flyfs-snapshots/NAME/<path from TOP to the tree>,
readable through the mount and over S3 as that prefix, and nothing can change it
(EROFS through the mount, AccessDenied over S3) until 'delete'. A top directory
holding snapshots cannot be removed. A file open for writing at the moment is not
captured, nor one at the bound of 32 shared layers: the snapshot lists them. A tree that fits one metadata
transaction (about 15,000 files) is copied in it; a larger one in several, while
every namespace change waits (a freeze of about a second per 30,000 files, at most
a minute), so the copy is still the tree at one moment.`,
	}
	create := &cobra.Command{
		Use:   "create PATH NAME",
		Short: "Snapshot the directory PATH as NAME",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, fs, done, err := o.dial(cmd, nil, o.timeout)
			if err != nil {
				return err
			}
			defer done()
			in, err := fs.Meta().Resolve(ctx, path.Clean("/"+args[0]), true)
			if err != nil {
				return err
			}
			if in.Type != metaapi.TypeDir {
				return fmt.Errorf("%s is a %s; snapshot a directory", args[0], in.Type)
			}
			s, err := fs.Meta().SnapshotCreate(ctx, in.ID, args[1])
			o.audit(cmd, fmt.Sprintf("snapshot %s of %s", args[1], path.Clean("/"+args[0])), err)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "snapshot %s of %s at %s: %d files (%s), %d directories, %d others\n",
				s.Name, s.Source, s.Path, s.Files, adminBytes(s.Bytes), s.Dirs, s.Others)
			if s.Batches > 1 {
				fmt.Fprintf(out, "copied in %d metadata transactions; namespace changes waited meanwhile\n", s.Batches)
			}
			for _, p := range s.Skipped {
				fmt.Fprintf(cmd.ErrOrStderr(), "not captured: %s\n", p)
			}
			return nil
		},
	}
	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List every snapshot: name, what it copies, when, what it holds, where it is",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, fs, done, err := o.dial(cmd, nil, o.timeout)
			if err != nil {
				return err
			}
			defer done()
			list, err := fs.Meta().SnapshotList(ctx)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if list == nil {
					list = []metaapi.Snapshot{}
				}
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(list)
			}
			if len(list) == 0 {
				fmt.Fprintln(out, "No snapshots.")
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSOURCE\tCREATED\tFILES\tSIZE\tPATH")
			for _, s := range list {
				name := s.Name
				if s.Building {
					name += " (unfinished: delete it)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", name, s.Source, time.Unix(0, s.Created).UTC().Format(time.DateTime), s.Files, adminBytes(s.Bytes), s.Path)
			}
			return tw.Flush()
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print the snapshots as JSON")
	del := &cobra.Command{
		Use:   "delete PATH NAME",
		Short: "Delete snapshot NAME of the top directory PATH is under (its data goes when no file shares it)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, fs, done, err := o.dial(cmd, nil, o.timeout)
			if err != nil {
				return err
			}
			defer done()
			top := strings.SplitN(strings.TrimPrefix(path.Clean("/"+args[0]), "/"), "/", 2)[0]
			if top == "" {
				return fmt.Errorf("name a path under a top directory (snapshots live in /TOP/%s)", ".flyfs-snapshots")
			}
			in, err := fs.Meta().Resolve(ctx, "/"+top, true)
			if err != nil {
				return err
			}
			err = fs.Meta().SnapshotDelete(ctx, in.ID, args[1])
			o.audit(cmd, fmt.Sprintf("delete snapshot %s of /%s", args[1], top), err)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "snapshot %s of /%s deleted\n", args[1], top)
			return nil
		},
	}
	cmd.AddCommand(create, list, del)
	return cmd
}
