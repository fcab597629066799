// Package argocdhealth runs an Argo CD resource health check (a Lua script of argocd-cm's
// resource.customizations.health.<group>_<kind>) on an object the way Argo CD does: with gopher-lua, the
// interpreter Argo CD embeds, only the libraries Argo CD opens for user scripts (package, base and table: no
// string library), the object as the global obj and a one-second limit. Tests use it on Dockside's objects
// (config/argocd, docs/gitops.md).
package argocdhealth

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// Key is the argocd-cm key whose value is the health check of a group's kind.
func Key(group, kind string) string {
	return "resource.customizations.health." + group + "_" + kind
}

// Health is what a health check returns, and what Argo CD shows for the object.
type Health struct {
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
}

// statuses are the health statuses Argo CD accepts from a script; it reads any other as Unknown.
var statuses = map[string]bool{
	"Healthy": true, "Progressing": true, "Degraded": true, "Suspended": true, "Missing": true, "Unknown": true,
}

// scriptTimeout is how long Argo CD lets a health check run.
const scriptTimeout = time.Second

// Evaluate runs script with obj (an object as the API server serves it, decoded from JSON) as its global obj.
func Evaluate(script string, obj map[string]any) (Health, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.LoadLibName, lua.OpenPackage}, {lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.open), Protect: true}, lua.LString(lib.name)); err != nil {
			return Health{}, fmt.Errorf("opening Lua library %q: %w", lib.name, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", toLua(l, obj))
	if err := l.DoString(script); err != nil {
		return Health{}, fmt.Errorf("running the health check: %w", err)
	}
	returned, ok := l.Get(-1).(*lua.LTable)
	if !ok {
		return Health{}, fmt.Errorf("the health check returned %s, not a table", l.Get(-1).Type())
	}
	h := Health{Status: fieldString(returned, "status"), Message: fieldString(returned, "message")}
	if !statuses[h.Status] {
		return Health{Status: "Unknown", Message: "Lua returned an invalid health status"}, nil
	}
	return h, nil
}

// fieldString is a string field of a Lua table, "" when absent. Argo CD turns the returned table into JSON and
// reads status and message from it; a number there would fail its decoding, which reads here as "".
func fieldString(t *lua.LTable, name string) string {
	if s, ok := t.RawGetString(name).(lua.LString); ok {
		return string(s)
	}
	return ""
}

// toLua converts a value decoded from JSON into Lua as Argo CD does: numbers of every Go type to Lua numbers,
// json.Number to a string, arrays to tables indexed from 1, objects to tables keyed by name, null to nil.
func toLua(l *lua.LState, value any) lua.LValue {
	switch v := value.(type) {
	case bool:
		return lua.LBool(v)
	case float64:
		return lua.LNumber(v)
	case int:
		return lua.LNumber(v)
	case int32:
		return lua.LNumber(v)
	case int64:
		return lua.LNumber(v)
	case string:
		return lua.LString(v)
	case json.Number:
		return lua.LString(v)
	case []any:
		t := l.CreateTable(len(v), 0)
		for _, item := range v {
			t.Append(toLua(l, item))
		}
		return t
	case map[string]any:
		t := l.CreateTable(0, len(v))
		for key, item := range v {
			t.RawSetH(lua.LString(key), toLua(l, item))
		}
		return t
	}
	return lua.LNil
}
