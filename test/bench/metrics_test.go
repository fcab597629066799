package bench

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"
)

// metrics is one scrape of a Prometheus text endpoint.
type metrics map[string]*dto.MetricFamily

func scrape(ctx context.Context, hc *http.Client, url string) (metrics, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(resp.Body)
}

// sum adds up the series of name whose labels pass keep (nil keeps all): counter and gauge values, and
// the observation counts of histograms.
func (m metrics) sum(name string, keep func(labels map[string]string) bool) float64 {
	return m.fold(name, keep, sampleValue)
}

// fold adds up value of each series of name whose labels pass keep (nil keeps all).
func (m metrics) fold(name string, keep func(labels map[string]string) bool, value func(*dto.Metric) float64) float64 {
	fam, ok := m[name]
	if !ok {
		return 0
	}
	var total float64
	for _, s := range fam.Metric {
		labels := map[string]string{}
		for _, l := range s.Label {
			labels[l.GetName()] = l.GetValue()
		}
		if keep == nil || keep(labels) {
			total += value(s)
		}
	}
	return total
}

// sampleValue is a counter's or gauge's value, or a histogram's observation count.
func sampleValue(s *dto.Metric) float64 {
	switch {
	case s.Counter != nil:
		return s.Counter.GetValue()
	case s.Gauge != nil:
		return s.Gauge.GetValue()
	case s.Histogram != nil:
		return float64(s.Histogram.GetSampleCount())
	case s.Untyped != nil:
		return s.Untyped.GetValue()
	}
	return 0
}

// byLabel is sum split by the value of one label.
func (m metrics) byLabel(name, label string) map[string]float64 {
	return m.foldByLabel(name, label, sampleValue)
}

// histogramSumByLabel is histogramSum split by the value of one label.
func (m metrics) histogramSumByLabel(name, label string) map[string]float64 {
	return m.foldByLabel(name, label, sampleSum)
}

// foldByLabel adds up value of each series of name, split by the value of one label.
func (m metrics) foldByLabel(name, label string, value func(*dto.Metric) float64) map[string]float64 {
	out := map[string]float64{}
	for _, s := range m[name].GetMetric() {
		for _, l := range s.Label {
			if l.GetName() == label {
				out[l.GetValue()] += value(s)
			}
		}
	}
	return out
}

// sampleSum is a histogram's sum of observations.
func sampleSum(s *dto.Metric) float64 { return s.GetHistogram().GetSampleSum() }

// apiServerMetrics scrapes kube-apiserver's own /metrics with admin credentials.
func apiServerMetrics(ctx context.Context, cfg *rest.Config) (metrics, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return scrape(ctx, hc, strings.TrimSuffix(cfg.Host, "/")+"/metrics")
}

// writes counts the API server's write requests (create, update, patch, delete, apply), optionally of one
// API group only ("" for all groups).
func writes(m metrics, group string) float64 {
	return m.sum("apiserver_request_total", func(l map[string]string) bool {
		switch l["verb"] {
		case "GET", "LIST", "WATCH", "CONNECT":
			return false
		}
		return l["resource"] != "" && (group == "" || l["group"] == group)
	})
}

// reads counts the API server's GETs of single objects of one API group.
func reads(m metrics, group string) float64 {
	return m.sum("apiserver_request_total", func(l map[string]string) bool {
		return l["verb"] == "GET" && l["resource"] != "" && l["group"] == group
	})
}

// dockerCalls counts the agent's Docker operations, as the instrumented driver wrapper around every driver
// call records them (one histogram observation per call), by operation.
func dockerCalls(m metrics) map[string]float64 {
	return m.byLabel("dockside_docker_operation_duration_seconds", "operation")
}

func total(byOp map[string]float64) float64 {
	var t float64
	for _, v := range byOp {
		t += v
	}
	return t
}
