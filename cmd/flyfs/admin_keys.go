package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/flyfs/flyfs/gateway"
	"github.com/spf13/cobra"
)

func init() {
	extraAdminCommands = append(extraAdminCommands, func(*adminOptions) *cobra.Command { return adminKeysCmd() })
}

// keysOptions reach the gateway's admin API: access keys live in the KV
// store, which a running server holds open, so the CLI asks the gateway,
// signing with the root key.
type keysOptions struct {
	endpoint  string
	accessKey string
	secretKey string
	region    string
	timeout   time.Duration
}

func adminKeysCmd() *cobra.Command {
	o := &keysOptions{}
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Manage S3 access keys (create, list, revoke) through a gateway",
		Long: `Manage the S3 gateway's access keys. The keys live in the cluster's KV store; this
command asks a running gateway (--endpoint, its S3 address) through its admin API,
signed with the root key (--access-key/--secret-key or FLYFS_ACCESS_KEY/FLYFS_SECRET_KEY).`,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&o.endpoint, "endpoint", "http://127.0.0.1:9300", "the gateway's S3 endpoint")
	pf.StringVar(&o.accessKey, "access-key", "", "root access key (env FLYFS_ACCESS_KEY)")
	pf.StringVar(&o.secretKey, "secret-key", "", "root secret key (env FLYFS_SECRET_KEY)")
	pf.StringVar(&o.region, "region", "us-east-1", "region to sign for")
	pf.DurationVar(&o.timeout, "request-timeout", 30*time.Second, "give up after this long")

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
			k := gateway.AccessKey{ID: create.id, Secret: create.secret, UID: create.uid, GID: create.gid, Description: create.desc, Buckets: map[string]gateway.Permission{}}
			for _, b := range create.buckets {
				name, perm, ok := strings.Cut(b, "=")
				if !ok || (perm != "read" && perm != "readwrite") {
					return fmt.Errorf("--bucket %q: want NAME=read or NAME=readwrite", b)
				}
				k.Buckets[name] = gateway.Permission(perm)
			}
			if len(k.Buckets) == 0 {
				return errors.New("grant at least one --bucket NAME=read|readwrite (NAME may be *)")
			}
			body, _ := json.Marshal(k)
			var out gateway.AccessKey
			if err := o.call(cmd, "POST", "/_flyfs/admin/keys", body, &out); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "access key: %s\nsecret key: %s\n", out.ID, out.Secret)
			return nil
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
		Short: "List access keys (without secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var keys []gateway.AccessKey
			if err := o.call(cmd, "GET", "/_flyfs/admin/keys", nil, &keys); err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ACCESS KEY\tUID:GID\tBUCKETS\tCREATED\tDESCRIPTION")
			for _, k := range keys {
				var bs []string
				for b, p := range k.Buckets {
					bs = append(bs, b+"="+string(p))
				}
				if k.Root {
					bs = []string{"(root)"}
				}
				fmt.Fprintf(tw, "%s\t%d:%d\t%s\t%s\t%s\n", k.ID, k.UID, k.GID, strings.Join(bs, ","), k.Created.Format(time.RFC3339), k.Description)
			}
			return tw.Flush()
		},
	}
	revokeCmd := &cobra.Command{
		Use:   "revoke ACCESS_KEY",
		Short: "Revoke an access key (effective at once on that gateway, within a second on others)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.call(cmd, "DELETE", "/_flyfs/admin/keys/"+args[0], nil, nil); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "revoked %s\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(createCmd, listCmd, revokeCmd)
	return cmd
}

// call sends one signed admin request and decodes the JSON answer into out.
func (o *keysOptions) call(cmd *cobra.Command, method, path string, body []byte, out any) error {
	if err := bindEnv(cmd); err != nil {
		return err
	}
	if o.accessKey == "" || o.secretKey == "" {
		return errors.New("the root key is needed: --access-key/--secret-key or FLYFS_ACCESS_KEY/FLYFS_SECRET_KEY")
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(o.endpoint, "/")+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	req.Header.Set("X-Amz-Content-Sha256", hash)
	req.Header.Set("Content-Type", "application/json")
	if err := v4.NewSigner().SignHTTP(ctx, aws.Credentials{AccessKeyID: o.accessKey, SecretAccessKey: o.secretKey}, req, hash, "s3", o.region, time.Now()); err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error   string `json:"error"`
			Code    string `xml:"Code"`
			Message string `xml:"Message"`
		}
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			return fmt.Errorf("%s: %s", resp.Status, e.Error)
		}
		return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(data)))
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}
