package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"

	"github.com/flyfs/flyfs/cluster"
	"github.com/spf13/pflag"
)

// defaultTokenFile is the token file `flyfs server` writes with its default
// --data: commands run beside it find the token without being told.
const defaultTokenFile = "flyfs-data/" + cluster.TokenFile

// tokenOptions say where a role finds the cluster token.
type tokenOptions struct {
	token    string
	file     string
	insecure bool
}

func addTokenFlags(f *pflag.FlagSet, o *tokenOptions) {
	f.StringVar(&o.token, "token", "", "cluster token every peer presents (env FLYFS_TOKEN)")
	f.StringVar(&o.file, "token-file", "", "file holding the cluster token (env FLYFS_TOKEN_FILE; default "+defaultTokenFile+" when it exists, the file flyfs server writes)")
	f.BoolVar(&o.insecure, "insecure-no-token", false, "run without a cluster token: anyone who reaches the RPC ports can read and delete every file")
}

var errNoToken = errors.New("no cluster token: give --token (or FLYFS_TOKEN) or --token-file (flyfs server keeps it in <data>/token); --insecure-no-token runs without one")

// resolve returns the cluster token: --token, else the token file. Without
// either it refuses, unless --insecure-no-token (then it warns).
func (o *tokenOptions) resolve(role string, log *slog.Logger) (string, error) {
	switch {
	case o.insecure && (o.token != "" || o.file != ""):
		return "", errors.New("--insecure-no-token and a cluster token (--token or --token-file): give one or the other")
	case o.insecure:
		log.Warn(role+" runs without a cluster token (--insecure-no-token): anyone who reaches its port can read and delete every file", "role", role)
		return "", nil
	case o.token != "":
		return o.token, nil
	case o.file != "":
		t, err := cluster.ReadToken(o.file)
		if err != nil {
			return "", fmt.Errorf("--token-file: %w", err)
		}
		return t, nil
	}
	t, err := cluster.ReadToken(defaultTokenFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", errNoToken
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", defaultTokenFile, err)
	}
	return t, nil
}
