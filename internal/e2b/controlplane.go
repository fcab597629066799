package e2b

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// maxBody bounds a control-plane request body: E2B's are small JSON objects.
const maxBody = 1 << 20

// defaultTimeout is E2B's default time to live of a sandbox, in seconds.
const defaultTimeout = 15

// readBody decodes a JSON body into v; an empty body leaves v as it is.
func readBody(r *http.Request, v any) error {
	data, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return errorf(http.StatusBadRequest, "reading the body: %v", err)
	}
	if len(data) > maxBody {
		return errorf(http.StatusRequestEntityTooLarge, "the body is larger than %d bytes", maxBody)
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, v); err != nil {
		return errorf(http.StatusBadRequest, "the body is not the JSON this call takes: %v", err)
	}
	return nil
}

// deadlineFor is spec.activeDeadlineSeconds that ends a Sandbox started at start timeout seconds from now.
func deadlineFor(start time.Time, timeout int64) (int64, error) {
	if timeout < 1 {
		return 0, errorf(http.StatusBadRequest, "timeout must be at least 1 second")
	}
	ran := int64(0)
	if !start.IsZero() {
		ran = max(int64(time.Since(start).Seconds())+1, 0)
	}
	d := ran + timeout
	if d > maxDeadline {
		return 0, errorf(http.StatusBadRequest, "timeout %ds would end the sandbox more than 7 days (604800 s) after its start, the most Dockside allows", timeout)
	}
	return d, nil
}

// create serves POST /sandboxes.
func (g *Gateway) create(w http.ResponseWriter, r *http.Request, c *caller) {
	var req newSandbox
	if err := readBody(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := refusedOptions(req); err != nil {
		writeError(w, err)
		return
	}
	timeout := int64(defaultTimeout)
	if req.Timeout != nil {
		timeout = *req.Timeout
	}
	if _, err := deadlineFor(time.Time{}, timeout); err != nil {
		writeError(w, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), g.createWait)
	defer cancel()
	tpl, restoreFrom, err := templateOf(ctx, c, req.TemplateID)
	if err != nil {
		writeError(w, err)
		return
	}
	if req.AllowInternetAccess != nil && !*req.AllowInternetAccess && tpl.Spec.Sandbox.Network.Mode == dsv1alpha1.NetworkUnrestricted {
		writeError(w, errorf(http.StatusBadRequest, "allow_internet_access is false but template %q gives its Sandboxes network mode Unrestricted: use a template of mode None", tpl.Name))
		return
	}
	marks, err := marksOf(req)
	if err != nil {
		writeError(w, err)
		return
	}
	pool := ""
	if restoreFrom == "" { // a warm member's workspace is made already: a restore starts cold
		if pool, err = poolOf(ctx, c, tpl.Name); err != nil {
			writeError(w, fromAPI(err, "listing the SandboxWarmPools"))
			return
		}
	}
	var name string
	var made client.Object
	if pool != "" {
		name, made, err = g.claim(ctx, c, pool, tpl.Name, marks, req.EnvVars, timeout)
	} else {
		name, made, err = g.cold(ctx, c, tpl, restoreFrom, marks, req.EnvVars, timeout)
	}
	var sbx *dsv1alpha1.Sandbox
	if err == nil {
		sbx, err = g.waitReady(ctx, c, name)
	}
	if err == nil {
		err = g.waitServed(ctx, c, sbx)
	}
	if err != nil {
		undo(ctx, c, made)
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, g.created(c, tpl.Name, name, marks))
}

// marksOf are the annotations a create writes on its Sandbox: its metadata, and what secure and
// network.allowPublicTraffic false ask for (docs/e2b.md, "Ports of a sandbox").
func marksOf(req newSandbox) (map[string]string, error) {
	meta, err := json.Marshal(req.Metadata)
	if err != nil {
		return nil, fmt.Errorf("encoding the metadata: %w", err)
	}
	marks := map[string]string{AnnotationMetadata: string(meta)}
	if req.Secure {
		marks[AnnotationSecure] = "true"
	}
	var network struct {
		AllowPublicTraffic *bool `json:"allowPublicTraffic"`
	}
	if given(req.Network) {
		_ = json.Unmarshal(req.Network, &network) // refusedOptions read it already
	}
	if network.AllowPublicTraffic != nil && !*network.AllowPublicTraffic {
		token, err := newTrafficToken()
		if err != nil {
			return nil, err
		}
		marks[AnnotationTrafficToken] = token
	}
	return marks, nil
}

// refusedOptions refuses the create options the gateway does not serve yet, rather than ignore them.
func refusedOptions(req newSandbox) error {
	switch {
	case req.AutoPause:
		return errorf(http.StatusBadRequest, "autoPause is not supported yet by Dockside's E2B gateway: give the template spec.sandbox.idlePauseSeconds")
	case networkRules(req.Network):
		return errorf(http.StatusBadRequest, "network rules are not supported yet by Dockside's E2B gateway: the template's spec.sandbox.network decides (only allowPublicTraffic is taken)")
	case given(req.MCP):
		return errorf(http.StatusBadRequest, "mcp is not supported by Dockside's E2B gateway")
	case given(req.VolumeMounts):
		return errorf(http.StatusBadRequest, "volumeMounts are not supported by Dockside's E2B gateway")
	}
	return nil
}

// networkRules says whether the network option asks for more than allowPublicTraffic, which is served.
func networkRules(raw json.RawMessage) bool {
	if !given(raw) {
		return false
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return true
	}
	for k, v := range fields {
		switch {
		case k == "allowPublicTraffic":
			var b *bool
			if json.Unmarshal(v, &b) != nil {
				return true
			}
		case given(v) && string(v) != "false":
			return true
		}
	}
	return false
}

// given says whether an option asks for something: absent, null, [] and {} do not.
func given(raw json.RawMessage) bool {
	switch strings.Join(strings.Fields(string(raw)), "") {
	case "", "null", "[]", "{}":
		return false
	}
	return true
}

// created is the answer of create, resume and connect; marks are the Sandbox's annotations.
func (g *Gateway) created(c *caller, template, name string, marks map[string]string) createdSandbox {
	s := createdSandbox{TemplateID: template, SandboxID: name, ClientID: clientID, EnvdVersion: envdVersion, EnvdAccessToken: c.token, Domain: g.domainValue()}
	if t := marks[AnnotationTrafficToken]; t != "" {
		s.TrafficAccessToken = &t
	}
	return s
}

func (g *Gateway) domainValue() any {
	if g.domain == "" {
		return nil
	}
	return g.domain
}

// poolOf is the first (by name) SandboxWarmPool of the template in the caller's namespace, "" for none.
func poolOf(ctx context.Context, c *caller, template string) (string, error) {
	var pools dsv1alpha1.SandboxWarmPoolList
	if err := c.client.List(ctx, &pools, client.InNamespace(c.namespace)); err != nil {
		return "", err //nolint:wrapcheck // the caller names what failed
	}
	var names []string
	for _, p := range pools.Items {
		if p.Spec.TemplateRef.Name == template && p.DeletionTimestamp == nil {
			names = append(names, p.Name)
		}
	}
	slices.Sort(names)
	if len(names) == 0 {
		return "", nil
	}
	return names[0], nil
}

func commandEnv(env map[string]string) []dsv1alpha1.ExecutionEnvVar {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]dsv1alpha1.ExecutionEnvVar, 0, len(keys))
	for _, k := range keys {
		out = append(out, dsv1alpha1.ExecutionEnvVar{Name: k, Value: env[k]})
	}
	return out
}

// cold creates a Sandbox of the template's spec: the create's timeout as its deadline, its envVars for every
// command, its metadata in an annotation; restoreFrom ("" for none) is the Checkpoint of a snapshot it
// starts from.
func (g *Gateway) cold(ctx context.Context, c *caller, tpl *dsv1alpha1.SandboxTemplate, restoreFrom string, marks map[string]string, env map[string]string, timeout int64) (string, client.Object, error) {
	sbx := &dsv1alpha1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "e2b-", Namespace: c.namespace,
			Labels:      map[string]string{LabelTemplate: tpl.Name},
			Annotations: marks,
		},
		Spec: *tpl.Spec.Sandbox.DeepCopy(),
	}
	sbx.Spec.ActiveDeadlineSeconds = ptr.To(timeout)
	sbx.Spec.RestoreFrom = restoreFrom
	sbx.Spec.CommandEnv = append(sbx.Spec.CommandEnv, commandEnv(env)...)
	if err := c.client.Create(ctx, sbx); err != nil {
		return "", nil, fromAPI(err, fmt.Sprintf("creating a Sandbox of template %q", tpl.Name))
	}
	return sbx.Name, sbx, nil
}

// undo deletes what a create that failed made (nil: nothing), so that a refused create leaves nothing
// behind. It runs on even when the request's context ended.
func undo(ctx context.Context, c *caller, made client.Object) {
	if made == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	_ = c.client.Delete(ctx, made, client.PropagationPolicy(metav1.DeletePropagationBackground))
}

// claim takes a Sandbox of the pool with a SandboxClaim (warm when the pool has one ready, cold otherwise) and
// marks it as the gateway's once bound.
func (g *Gateway) claim(ctx context.Context, c *caller, pool, template string, marks map[string]string, env map[string]string, timeout int64) (string, client.Object, error) {
	cl := &dsv1alpha1.SandboxClaim{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "e2b-", Namespace: c.namespace,
			Labels:      map[string]string{LabelTemplate: template},
			Annotations: map[string]string{AnnotationMetadata: marks[AnnotationMetadata]},
		},
		Spec: dsv1alpha1.SandboxClaimSpec{
			PoolRef:               dsv1alpha1.LocalObjectReference{Name: pool},
			Env:                   commandEnv(env),
			ActiveDeadlineSeconds: ptr.To(timeout),
		},
	}
	if len(cl.Spec.Env) == 0 {
		cl.Spec.Env = nil
	}
	if err := c.client.Create(ctx, cl); err != nil {
		return "", nil, fromAPI(err, fmt.Sprintf("claiming a Sandbox of pool %q", pool))
	}
	name, err := g.bound(ctx, c, cl, template, marks)
	return name, cl, err
}

// bound waits for the claim to get its Sandbox and marks that Sandbox as the gateway's.
func (g *Gateway) bound(ctx context.Context, c *caller, cl *dsv1alpha1.SandboxClaim, template string, marks map[string]string) (string, error) {
	key := client.ObjectKeyFromObject(cl)
	for {
		if err := c.client.Get(ctx, key, cl); err != nil {
			return "", fromAPI(err, "reading the SandboxClaim "+cl.Name)
		}
		if s := stalledMessage(cl.Status.Conditions); s != "" {
			return "", errorf(http.StatusBadRequest, "the SandboxClaim %s was refused: %s", cl.Name, s)
		}
		if cl.Status.SandboxName != "" {
			break
		}
		if err := sleep(ctx, pollEvery); err != nil {
			return "", errorf(http.StatusGatewayTimeout, "the SandboxClaim %s got no Sandbox in time", cl.Name)
		}
	}
	name := cl.Status.SandboxName
	var sbx dsv1alpha1.Sandbox
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: c.namespace, Name: name}, &sbx); err != nil {
		return "", fromAPI(err, "reading the claimed Sandbox "+name)
	}
	patch := client.MergeFrom(sbx.DeepCopy())
	metav1.SetMetaDataLabel(&sbx.ObjectMeta, LabelTemplate, template)
	for k, v := range marks {
		metav1.SetMetaDataAnnotation(&sbx.ObjectMeta, k, v)
	}
	if err := c.client.Patch(ctx, &sbx, patch); err != nil {
		return "", fromAPI(err, "marking the claimed Sandbox "+name)
	}
	return name, nil
}

// stalledMessage is the message of a True Stalled condition, "" without one.
func stalledMessage(conds []metav1.Condition) string {
	if c := meta.FindStatusCondition(conds, dsv1alpha1.ConditionStalled); c != nil && c.Status == metav1.ConditionTrue {
		return c.Message
	}
	return ""
}

// pollEvery is how often the gateway reads an object it waits for.
const pollEvery = 100 * time.Millisecond

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err() //nolint:wrapcheck // the callers say what they waited for
	case <-t.C:
		return nil
	}
}

// waitReady waits until the Sandbox is Ready, as E2B's create returns a running sandbox.
func (g *Gateway) waitReady(ctx context.Context, c *caller, name string) (*dsv1alpha1.Sandbox, error) {
	var sbx dsv1alpha1.Sandbox
	for {
		if err := c.client.Get(ctx, client.ObjectKey{Namespace: c.namespace, Name: name}, &sbx); err != nil {
			return nil, fromAPI(err, "reading the Sandbox "+name)
		}
		ok, why := ready(&sbx)
		if ok {
			return &sbx, nil
		}
		if why != "" {
			return nil, errorf(http.StatusBadRequest, "the Sandbox %s cannot start: %s", name, why)
		}
		if err := sleep(ctx, pollEvery); err != nil {
			return nil, errorf(http.StatusGatewayTimeout, "the Sandbox %s was not Ready within %s", name, g.createWait)
		}
	}
}

// servedPoll is how often waitServed asks the data plane again.
const servedPoll = 500 * time.Millisecond

// waitServed waits until the data plane serves the Ready Sandbox (it lists its processes), so that create,
// resume and connect answer only once envd's calls work. Ready is the agent's word in the API server, while
// envd's calls go through kube-apiserver's aggregator, which can hold the data plane unavailable for tens of
// seconds after the agent restarted or missed a discovery check (docs/e2b.md, "When the data plane answers").
// Only that answer (503, after the transport's own tries) and a 409 of an agent whose cache has not yet seen
// the Sandbox Running are waited out; any other refusal is the caller's own (a key without processes rights)
// and is left to the calls that meet it. A lazy Sandbox that has not started is not asked: any call would
// start it (docs/design/lazy-start.md), which is its first command's to do.
func (g *Gateway) waitServed(ctx context.Context, c *caller, sbx *dsv1alpha1.Sandbox) error {
	if dsv1alpha1.LazyUnstarted(sbx) {
		return nil
	}
	name := sbx.Name
	p, err := newSandboxPlane(c, name)
	if err != nil {
		return err
	}
	for {
		_, err := p.processes(ctx)
		if code := codeOf(err); err == nil || (code != 0 && code != http.StatusServiceUnavailable && code != http.StatusConflict) {
			return nil
		}
		if sleep(ctx, servedPoll) != nil {
			return errorf(http.StatusGatewayTimeout, "the Sandbox %s is Ready but its data plane did not serve it within %s: %v", name, g.createWait, err)
		}
	}
}

// list serves GET /sandboxes and /v2/sandboxes: the Sandboxes made through the gateway, filtered by the
// metadata query (k=v pairs, URL-encoded) and the state query.
func (g *Gateway) list(w http.ResponseWriter, r *http.Request, c *caller) {
	var sandboxes dsv1alpha1.SandboxList
	if err := c.client.List(r.Context(), &sandboxes, client.InNamespace(c.namespace), client.HasLabels{LabelTemplate}); err != nil {
		writeError(w, fromAPI(err, "listing Sandboxes"))
		return
	}
	want, err := url.ParseQuery(r.URL.Query().Get("metadata"))
	if err != nil {
		writeError(w, errorf(http.StatusBadRequest, "metadata is not a query string of key=value pairs: %v", err))
		return
	}
	var states []string
	for _, s := range r.URL.Query()["state"] {
		states = append(states, strings.Split(s, ",")...)
	}
	out := []sandboxDetail{}
	for i := range sandboxes.Items {
		sbx := &sandboxes.Items[i]
		if sbx.DeletionTimestamp != nil {
			continue
		}
		d := detailOf(sbx)
		if len(states) > 0 && !slices.Contains(states, d.State) {
			continue
		}
		if !matches(d.Metadata, want) {
			continue
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b sandboxDetail) int { return a.StartedAt.Compare(b.StartedAt) })
	writeJSON(w, http.StatusOK, out)
}

func matches(meta map[string]string, want url.Values) bool {
	for k, vs := range want {
		for _, v := range vs {
			if meta[k] != v {
				return false
			}
		}
	}
	return true
}

// sandbox reads the Sandbox {id} of the caller's namespace.
func sandboxOf(ctx context.Context, c *caller, id string) (*dsv1alpha1.Sandbox, error) {
	var sbx dsv1alpha1.Sandbox
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: c.namespace, Name: id}, &sbx); err != nil {
		return nil, fromAPI(err, fmt.Sprintf("sandbox %q", id))
	}
	if sbx.DeletionTimestamp != nil {
		return nil, errorf(http.StatusNotFound, "sandbox %q not found", id)
	}
	return &sbx, nil
}

// get serves GET /sandboxes/{id}.
func (g *Gateway) get(w http.ResponseWriter, r *http.Request, c *caller) {
	sbx, err := sandboxOf(r.Context(), c, r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	d := detailOf(sbx)
	d.EnvdAccessToken = c.token
	d.Domain = g.domainValue()
	writeJSON(w, http.StatusOK, d)
}

// kill serves DELETE /sandboxes/{id}: a claimed Sandbox goes with its claim, any other is deleted.
func (g *Gateway) kill(w http.ResponseWriter, r *http.Request, c *caller) {
	ctx := r.Context()
	sbx, err := sandboxOf(ctx, c, r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	var obj client.Object = sbx
	if claim := sbx.Labels[dsv1alpha1.LabelClaim]; claim != "" {
		obj = &dsv1alpha1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Namespace: c.namespace, Name: claim}}
	}
	if err := c.client.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
		writeError(w, fromAPI(err, fmt.Sprintf("killing sandbox %q", sbx.Name)))
		return
	}
	g.watchers.dropSandbox(c.namespace + "/" + sbx.Name)
	g.ports.forget(c.namespace, sbx.Name)
	w.WriteHeader(http.StatusNoContent)
}

// setTimeout serves POST /sandboxes/{id}/timeout (body timeout) and /refreshes (body duration): the deadline
// becomes now plus that many seconds.
func (g *Gateway) setTimeout(field string) func(http.ResponseWriter, *http.Request, *caller) {
	return func(w http.ResponseWriter, r *http.Request, c *caller) {
		var body struct {
			Timeout  *int64 `json:"timeout"`
			Duration *int64 `json:"duration"`
		}
		if err := readBody(r, &body); err != nil {
			writeError(w, err)
			return
		}
		t := body.Timeout
		if field == "duration" {
			t = body.Duration
		}
		if t == nil {
			writeError(w, errorf(http.StatusBadRequest, "%s is required", field))
			return
		}
		ctx := r.Context()
		sbx, err := sandboxOf(ctx, c, r.PathValue("id"))
		if err != nil {
			writeError(w, err)
			return
		}
		if err := g.update(ctx, c, sbx, func(s *dsv1alpha1.Sandbox) error { return extend(s, *t) }); err != nil {
			writeError(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

func extend(sbx *dsv1alpha1.Sandbox, timeout int64) error {
	d, err := deadlineFor(startedAt(sbx), timeout)
	if err != nil {
		return err
	}
	sbx.Spec.ActiveDeadlineSeconds = ptr.To(d)
	return nil
}

// update patches the Sandbox with what change makes of it.
func (g *Gateway) update(ctx context.Context, c *caller, sbx *dsv1alpha1.Sandbox, change func(*dsv1alpha1.Sandbox) error) error {
	// The agent writes the Sandbox too (finalizers, labels), so a conflict is read again and the change made
	// on what is there now, as often as retry.DefaultRetry allows.
	var changeErr error
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		patch := client.MergeFromWithOptions(sbx.DeepCopy(), client.MergeFromWithOptimisticLock{})
		if changeErr = change(sbx); changeErr != nil {
			return nil
		}
		err := c.client.Patch(ctx, sbx, patch)
		if apierrors.IsConflict(err) {
			if getErr := c.client.Get(ctx, client.ObjectKeyFromObject(sbx), sbx); getErr != nil {
				return fmt.Errorf("reading sandbox %q again after a conflict: %w", sbx.Name, getErr)
			}
		}
		return err //nolint:wrapcheck // fromAPI below turns the API server's error into E2B's shape
	})
	switch {
	case changeErr != nil:
		return changeErr
	case err != nil:
		return fromAPI(err, fmt.Sprintf("sandbox %q", sbx.Name))
	}
	return nil
}

// pause serves POST /sandboxes/{id}/pause: the Sandbox's lifecycle becomes Paused.
func (g *Gateway) pause(w http.ResponseWriter, r *http.Request, c *caller) {
	ctx := r.Context()
	sbx, err := sandboxOf(ctx, c, r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	if sbx.Spec.Lifecycle == dsv1alpha1.LifecyclePaused {
		writeError(w, errorf(http.StatusConflict, "sandbox %q is already paused", sbx.Name))
		return
	}
	if err := g.update(ctx, c, sbx, func(s *dsv1alpha1.Sandbox) error { s.Spec.Lifecycle = dsv1alpha1.LifecyclePaused; return nil }); err != nil {
		writeError(w, err)
		return
	}
	g.ports.forget(c.namespace, sbx.Name) // its ports answer "paused" at once, not after the pool's read ages
	w.WriteHeader(http.StatusNoContent)
}

// resume serves POST /sandboxes/{id}/resume (a paused one only, 409 otherwise) and, with connect,
// POST /sandboxes/{id}/connect (any: 200 running, 201 resumed). Both set the timeout when given.
func (g *Gateway) resume(connect bool) func(http.ResponseWriter, *http.Request, *caller) {
	return func(w http.ResponseWriter, r *http.Request, c *caller) {
		var body timeoutBody
		if err := readBody(r, &body); err != nil {
			writeError(w, err)
			return
		}
		if body.AutoPause {
			writeError(w, errorf(http.StatusBadRequest, "autoPause is not supported yet by Dockside's E2B gateway"))
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), g.createWait)
		defer cancel()
		sbx, err := sandboxOf(ctx, c, r.PathValue("id"))
		if err != nil {
			writeError(w, err)
			return
		}
		paused := sbx.Spec.Lifecycle == dsv1alpha1.LifecyclePaused
		if !paused && !connect {
			writeError(w, errorf(http.StatusConflict, "sandbox %q is already running", sbx.Name))
			return
		}
		err = g.update(ctx, c, sbx, func(s *dsv1alpha1.Sandbox) error {
			s.Spec.Lifecycle = dsv1alpha1.LifecycleRunning
			if body.Timeout != nil {
				return extend(s, *body.Timeout)
			}
			return nil
		})
		if err != nil {
			writeError(w, err)
			return
		}
		ready, err := g.waitReady(ctx, c, sbx.Name)
		if err != nil {
			writeError(w, err)
			return
		}
		if err := g.waitServed(ctx, c, ready); err != nil {
			writeError(w, err)
			return
		}
		if paused { // its ports answer at once, not "paused" from the port pool's last read (portpool.go)
			g.ports.forget(c.namespace, sbx.Name)
		}
		code := http.StatusCreated
		if connect && !paused {
			code = http.StatusOK
		}
		writeJSON(w, code, g.created(c, sbx.Labels[LabelTemplate], sbx.Name, sbx.Annotations))
	}
}

var errNoSandbox = errors.New("no sandbox named: send the E2b-Sandbox-Id header or use the host 49983-<sandboxID>.<domain>")
