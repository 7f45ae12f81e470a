package main

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/flyfs/flyfs/core/access"
	"github.com/flyfs/flyfs/core/client"
	"github.com/spf13/cobra"
)

// adminKeysCmd manages the cluster's access keys, which metad keeps: the
// CLI reaches them through the client, authorised by the cluster token.
func adminKeysCmd(o *adminOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Manage access keys (S3 and console sign-in): create, list, revoke",
		Long: `Manage the cluster's access keys: the credentials S3 clients sign with and admins
sign in to the console with. They are kept by the metadata service; this command
reaches it through the cluster managers (--mgmtd) with the cluster token.`,
	}
	with := func(cmd *cobra.Command, f func(fs *client.FS) error) error {
		ctx, fs, done, err := o.dial(cmd, nil, o.timeout)
		if err != nil {
			return err
		}
		defer done()
		cmd.SetContext(ctx)
		return f(fs)
	}

	var create struct {
		id, secret, desc string
		uid, gid         uint32
		buckets          []string
	}
	createCmd := &cobra.Command{
		Use:   "create --bucket NAME=read|readwrite ...",
		Short: "Create an access key; prints its id and secret",
		Long: `Create an access key. --bucket NAME=read or NAME=readwrite grants a bucket
(repeatable; NAME may be * for every bucket, which also allows creating buckets).
Objects the key writes are owned by --uid/--gid.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			k := access.Key{ID: create.id, Secret: create.secret, UID: create.uid, GID: create.gid, Description: create.desc,
				Buckets: map[string]access.Permission{}}
			for _, b := range create.buckets {
				name, perm, ok := strings.Cut(b, "=")
				if !ok || (perm != string(access.Read) && perm != string(access.ReadWrite)) {
					return fmt.Errorf("--bucket %q: want NAME=read or NAME=readwrite", b)
				}
				k.Buckets[name] = access.Permission(perm)
			}
			if len(k.Buckets) == 0 {
				return errors.New("grant at least one --bucket NAME=read|readwrite (NAME may be *)")
			}
			return with(cmd, func(fs *client.FS) error {
				made, err := fs.Keys().Create(cmd.Context(), k)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "access key: %s\nsecret key: %s\n", made.ID, made.Secret)
				return nil
			})
		},
	}
	cf := createCmd.Flags()
	cf.StringVar(&create.id, "id", "", "access key id (default: generated)")
	cf.StringVar(&create.secret, "secret", "", "secret key (default: generated)")
	cf.StringVar(&create.desc, "description", "", "free text")
	cf.Uint32Var(&create.uid, "uid", 0, "owner uid of what the key writes")
	cf.Uint32Var(&create.gid, "gid", 0, "owner gid of what the key writes")
	cf.StringArrayVar(&create.buckets, "bucket", nil, "NAME=read|readwrite (repeatable; * for every bucket)")

	listCmd := &cobra.Command{
		Use:   "list",
		Short: "List access keys (without secrets), the root key included",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return with(cmd, func(fs *client.FS) error {
				keys, err := fs.Keys().List(cmd.Context())
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ACCESS KEY\tUID:GID\tBUCKETS\tCREATED\tDESCRIPTION")
				for _, k := range keys {
					var bs []string
					for b, p := range k.Buckets {
						bs = append(bs, b+"="+string(p))
					}
					sort.Strings(bs)
					if k.Root {
						bs = []string{"(root)"}
					}
					fmt.Fprintf(tw, "%s\t%d:%d\t%s\t%s\t%s\n", k.ID, k.UID, k.GID, strings.Join(bs, ","), k.Created.Format(time.RFC3339), k.Description)
				}
				return tw.Flush()
			})
		},
	}
	revokeCmd := &cobra.Command{
		Use:   "revoke ACCESS_KEY",
		Short: "Revoke an access key (within a second everywhere in the cluster)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return with(cmd, func(fs *client.FS) error {
				if err := fs.Keys().Revoke(cmd.Context(), args[0]); err != nil {
					return fmt.Errorf("revoke %s: %w", args[0], err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "revoked %s\n", args[0])
				return nil
			})
		},
	}
	rotateCmd := &cobra.Command{
		Use:   "rotate ACCESS_KEY",
		Short: "Give an access key a new secret; prints it (the old one stops working within a second)",
		Long: `Give an access key a new secret key and print it, once. Programs using the old
secret lose access within a second everywhere in the cluster, and console
sessions signed in with it end. A root key given by FLYFS_ACCESS_KEY and
FLYFS_SECRET_KEY takes the environment's secret again when a gateway starts
with it: change the environment too.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return with(cmd, func(fs *client.FS) error {
				k, err := fs.Keys().Rotate(cmd.Context(), args[0])
				if err != nil {
					return fmt.Errorf("rotate %s: %w", args[0], err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "access key: %s\nsecret key: %s\n", k.ID, k.Secret)
				return nil
			})
		},
	}
	cmd.AddCommand(createCmd, listCmd, rotateCmd, revokeCmd)
	return cmd
}
