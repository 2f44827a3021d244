package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/freshen-dev/freshen/refresh"
)

// maxConfigListBytes bounds a file of tokens or of webhook endpoints.
const maxConfigListBytes = 1 << 20

// configList is a list that serve reads from a file flag and a text flag,
// such as the tokens (--tokens-file, --tokens) or the webhook endpoints
// (--webhooks-file, --webhooks).
type configList struct {
	fileFlag, textFlag string
	// item names the entries in field paths ("tokens" gives
	// "tokens[].scopes"); example shows the shape in errors.
	item, example string
}

// readConfigList reads the JSON arrays of file and text (either may be
// ""), the file's first, passes each non-empty one to check, and returns
// their entries together. Its errors name the flag and the field.
func readConfigList[T any](l configList, file, text string, check func([]T) error) ([]T, error) {
	var all []T
	for _, src := range []struct {
		name string
		read func() ([]byte, error)
	}{
		{"--" + l.fileFlag + " " + file, func() ([]byte, error) {
			if file == "" {
				return nil, nil
			}
			f, err := os.Open(file)
			if err != nil {
				return nil, err
			}
			defer f.Close()
			data, err := io.ReadAll(io.LimitReader(f, maxConfigListBytes+1))
			if err == nil && len(data) > maxConfigListBytes {
				err = fmt.Errorf("must be at most %d bytes", maxConfigListBytes)
			}
			return data, err
		}},
		{"--" + l.textFlag, func() ([]byte, error) { return []byte(text), nil }},
	} {
		data, err := src.read()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src.name, err)
		}
		if len(bytes.TrimSpace(data)) == 0 {
			continue
		}
		items, err := parseConfigList[T](l, data)
		if err == nil {
			err = check(items)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src.name, err)
		}
		all = append(all, items...)
	}
	return all, nil
}

// parseConfigList reads a JSON array of l's entries, refusing unknown
// members.
func parseConfigList[T any](l configList, data []byte) ([]T, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var items []T
	if err := dec.Decode(&items); err != nil {
		var syntax *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syntax):
			return nil, fmt.Errorf("invalid JSON at byte %d: %s; %s", syntax.Offset, syntax, l.example)
		case errors.As(err, &typ) && typ.Field != "":
			return nil, &refresh.ValidationError{Fields: []refresh.FieldError{{Field: l.item + "[]." + typ.Field, Rule: "must be " + jsonKind(typ.Type.Kind()) + ", got " + typ.Value}}}
		}
		return nil, fmt.Errorf("%s; %s", err, l.example)
	}
	if dec.More() {
		return nil, errors.New("has more after the array; " + l.example)
	}
	return items, nil
}
