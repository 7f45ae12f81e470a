package frontend

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// GatewayGatherer gathers the S3 gateway's own metric families (flyfs_s3_*),
// which it keeps in a registry of its own and serves at GET /_flyfs/metrics
// on its port, by asking gw for that page in process; every family gets the
// label role=gateway. It bridges until the gateway registers on a given
// Registerer and serves that registry's families on /_flyfs/metrics.
func GatewayGatherer(gw http.Handler) prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		req := httptest.NewRequest(http.MethodGet, "/_flyfs/metrics", nil)
		req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
		rec := httptest.NewRecorder()
		gw.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			return nil, fmt.Errorf("s3 gateway metrics: status %d", rec.Code)
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
		if err != nil {
			return nil, fmt.Errorf("s3 gateway metrics: %w", err)
		}
		out := make([]*dto.MetricFamily, 0, len(fams))
		for name, f := range fams {
			if !strings.HasPrefix(name, "flyfs_s3_") {
				continue // the process's own go_* and process_* are gathered once, elsewhere
			}
			for _, m := range f.Metric {
				m.Label = append(m.Label, &dto.LabelPair{Name: ptr("role"), Value: ptr("gateway")})
			}
			out = append(out, f)
		}
		return out, nil
	})
}

func ptr(s string) *string { return &s }
