package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/pullwright/pullwright/app"
)

// healthcheck is "bot healthcheck": it asks the bot serving on this machine
// (the port of BOT_ADDR) for /healthz and fails unless the answer is 200
// within 3 seconds. It exists for the container image's HEALTHCHECK: the
// image has no shell and no curl, only the bot.
//
// The request goes to 127.0.0.1 when BOT_ADDR listens on every address
// (":8080", "0.0.0.0:8080", "[::]:8080"); when it names one address or
// host, to that. It never goes through a proxy and never follows a
// redirect: a 3xx is a failure.
func healthcheck(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
	addr := getenv("BOT_ADDR")
	if addr == "" {
		addr = app.DefaultAddr
	}
	url, err := healthURL(addr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	c := &http.Client{
		Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: GET %s: %s", url, resp.Status)
	}
	fmt.Fprintf(stdout, "GET %s: %s %s", url, resp.Status, body)
	return nil
}

// healthURL is the /healthz URL of a bot listening on addr.
func healthURL(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return "", fmt.Errorf("healthcheck: BOT_ADDR=%q: want host:port or :port", addr)
	}
	if n, err := net.LookupPort("tcp", port); err != nil {
		return "", fmt.Errorf("healthcheck: BOT_ADDR=%q: %w", addr, err)
	} else {
		port = strconv.Itoa(n)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/healthz", nil
}
