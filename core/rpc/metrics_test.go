package rpc_test

import (
	"context"
	"testing"

	"github.com/flyfs/flyfs/core/rpc"
	"github.com/prometheus/client_golang/prometheus"
)

// counterValue finds the value of a counter with the given labels.
func counterValue(t *testing.T, reg *prometheus.Registry, name, method, code string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["method"] == method && labels["code"] == code {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func TestMetricsCountCallsByMethodAndCode(t *testing.T) {
	reg := prometheus.NewRegistry()
	ts := startServer(t, rpc.Options{Registerer: reg})
	// A second server on the same registry shares the collectors rather
	// than failing to register.
	ts2 := startServer(t, rpc.Options{Registerer: reg})
	c := newClient(t, rpc.Options{Registerer: reg})
	for _, addr := range []string{ts.addr, ts.addr, ts2.addr} {
		if _, _, err := callEcho(context.Background(), c, addr, "m", nil); err != nil {
			t.Fatal(err)
		}
	}
	_, _, _ = rpc.Call[echoReq, echoResp](context.Background(), c, ts.addr, methodFail, &echoReq{Fail: "notfound"}, nil)

	tests := []struct {
		metric, method, code string
		want                 float64
	}{
		{"flyfs_rpc_server_calls_total", "test.Echo", "OK", 3},
		{"flyfs_rpc_server_calls_total", "test.Fail", "NotFound", 1},
		{"flyfs_rpc_client_calls_total", "test.Echo", "OK", 3},
		{"flyfs_rpc_client_calls_total", "test.Fail", "NotFound", 1},
	}
	for _, tt := range tests {
		if got := counterValue(t, reg, tt.metric, tt.method, tt.code); got != tt.want {
			t.Errorf("%s{method=%q,code=%q} = %v, want %v", tt.metric, tt.method, tt.code, got, tt.want)
		}
	}
}
