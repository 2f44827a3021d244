package main

import (
	"errors"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Connection strings carry passwords; no command prints one, in help, logs
// or errors. Flags that take a URL have no default taken from the
// environment (help would print it), and what is printed goes through a
// redactor made from the URLs in use.

// redactedPassword replaces a password wherever one would be printed.
const redactedPassword = "xxxxx"

var (
	// userinfoPassword finds the password of a URL that may not parse.
	userinfoPassword = regexp.MustCompile(`://[^:@/?#\s]*:([^@\s]+)@`)
	// keywordPassword finds the password of a key=value connection string
	// or URL query: password=secret or password='se cret'.
	keywordPassword = regexp.MustCompile(`password=('(?:[^'\\]|\\.)*'|[^\s&]+)`)
)

// redactURL returns a connection string (a URL or key=value string) with
// its password replaced by xxxxx.
func redactURL(s string) string {
	return newRedactor(s).String(s)
}

// redactor replaces the passwords of some connection strings in any text.
type redactor struct {
	secrets []string
}

// newRedactor returns a redactor of the passwords found in urls, which may
// be malformed.
func newRedactor(urls ...string) redactor {
	var r redactor
	add := func(p string) {
		if p != "" && p != redactedPassword {
			r.secrets = append(r.secrets, p)
			if esc := url.QueryEscape(p); esc != p {
				r.secrets = append(r.secrets, esc) // as it is written in the URL
			}
			if esc := url.PathEscape(p); esc != p {
				r.secrets = append(r.secrets, esc)
			}
		}
	}
	for _, s := range urls {
		if u, err := url.Parse(s); err == nil {
			if p, ok := u.User.Password(); ok {
				add(p)
			}
			add(u.Query().Get("password"))
		}
		for _, m := range userinfoPassword.FindAllStringSubmatch(s, -1) {
			add(m[1])
		}
		for _, m := range keywordPassword.FindAllStringSubmatch(s, -1) {
			add(strings.Trim(m[1], "'"))
		}
	}
	// Longest first, so that a password containing another is replaced
	// whole.
	slices.SortFunc(r.secrets, func(a, b string) int { return len(b) - len(a) })
	return r
}

// String returns s with every password replaced.
func (r redactor) String(s string) string {
	for _, p := range r.secrets {
		s = strings.ReplaceAll(s, p, redactedPassword)
	}
	return s
}

// Error returns err, or an error of the same text with every password
// replaced if it showed one (the chain is then lost, but nothing reads it
// past this point).
func (r redactor) Error(err error) error {
	if err == nil {
		return nil
	}
	text := err.Error()
	if clean := r.String(text); clean != text {
		return errors.New(clean)
	}
	return err
}
