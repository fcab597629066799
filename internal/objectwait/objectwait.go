// Package objectwait waits for one object of the API to reach a state, with a watch rather than a poll: a
// warm claim is Ready in tens of milliseconds, which a poll interval would only add to (docs/pools.md). The
// plugin's claim and pkg/execution's wait for an Execution both use it.
package objectwait

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ErrDeleted is what Until returns, wrapped, when the object is deleted (or replaced by another of its name)
// before it is done.
var ErrDeleted = errors.New("was deleted")

// Until reads obj (its namespace and name), and until done says it is done or fails, watches it from the
// version read and reads it again whenever the watch ends (the API server ends watches now and then, and an
// expired version ends one at once). list is an empty list of obj's kind, and kind its name for messages. It
// returns the object as last seen, also on an error; ctx's error comes back as it is. An object of another
// UID than the first one read is a deletion.
func Until[T client.Object](ctx context.Context, c client.WithWatch, obj T, list client.ObjectList, kind string, done func(T) (bool, error)) (T, error) {
	last := obj
	for {
		cur := last.DeepCopyObject().(T) //nolint:forcetypeassert // a deep copy is of the same type
		if err := c.Get(ctx, client.ObjectKeyFromObject(last), cur); err != nil {
			if ctx.Err() != nil {
				return last, ctx.Err() //nolint:wrapcheck // the caller's own context, as it ended
			}
			return last, fmt.Errorf("reading %s %s: %w", kind, last.GetName(), err)
		}
		if uid := last.GetUID(); uid != "" && cur.GetUID() != uid {
			return last, fmt.Errorf("%s %s %w", kind, last.GetName(), ErrDeleted)
		}
		last = cur
		if ok, err := done(last); ok || err != nil {
			return last, err
		}
		var ok bool
		var err error
		if last, ok, err = follow(ctx, c, last, list, kind, done); ok || err != nil {
			return last, err
		}
	}
}

// follow watches from's changes until done says it is done or fails (true), or the watch ends (false).
func follow[T client.Object](ctx context.Context, c client.WithWatch, from T, list client.ObjectList, kind string, done func(T) (bool, error)) (T, bool, error) {
	w, err := c.Watch(ctx, list, &client.ListOptions{
		Namespace:     from.GetNamespace(),
		FieldSelector: fields.OneTermEqualSelector("metadata.name", from.GetName()),
		Raw:           &metav1.ListOptions{ResourceVersion: from.GetResourceVersion()},
	})
	if err != nil {
		if ctx.Err() != nil {
			return from, false, ctx.Err() //nolint:wrapcheck // the caller's own context, as it ended
		}
		return from, false, fmt.Errorf("watching %s %s: %w", kind, from.GetName(), err)
	}
	defer w.Stop()
	last := from
	for {
		select {
		case <-ctx.Done():
			return last, false, ctx.Err() //nolint:wrapcheck // the caller's own context, as it ended
		case ev, open := <-w.ResultChan():
			if !open || ev.Type == watch.Error {
				return last, false, nil // read it again
			}
			got, isKind := ev.Object.(T)
			switch {
			case !isKind || got.GetUID() != from.GetUID():
				continue
			case ev.Type == watch.Deleted:
				return last, false, fmt.Errorf("%s %s %w", kind, from.GetName(), ErrDeleted)
			}
			last = got
			if ok, err := done(last); ok || err != nil {
				return last, true, err
			}
		}
	}
}
