package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/render"
)

// Formats kubectl users know, printed by cli-runtime's printers (the ones kubectl get uses) on
// the explanation document: the -o json document for jsonpath and go-template, the generated
// objects' names for name.
const (
	FormatName           = "name"
	FormatJSONPath       = "jsonpath"
	FormatJSONPathFile   = "jsonpath-file"
	FormatGoTemplate     = "go-template"
	FormatGoTemplateFile = "go-template-file"
)

// templateFormats are the -o values that take an argument: -o jsonpath='{.kind}'.
var templateFormats = []string{FormatJSONPath, FormatJSONPathFile, FormatGoTemplate, FormatGoTemplateFile}

// kubectlFormats returns the -o values printersFor adds to a command's own formats, as help
// and errors spell them.
func kubectlFormats() []string {
	out := []string{FormatName}
	for _, f := range templateFormats {
		out = append(out, f+"=...")
	}
	return out
}

// outputUsage is the help of -o for a command whose own formats are formats.
func outputUsage(formats []string) string {
	return "Output format: " + strings.Join(append(slices.Clone(formats), kubectlFormats()...), "|") +
		" (jsonpath and go-template run on the json document, docs/output.md)"
}

// outputCompletions are the -o completions for a command whose own formats are formats.
func outputCompletions(formats []string) []string {
	out := slices.Clone(formats)
	out = append(out, FormatName)
	for _, f := range templateFormats {
		out = append(out, f+"=")
	}
	return out
}

// printerFor returns the Printer for an -o value: name, jsonpath=, jsonpath-file=, go-template=
// and go-template-file= through cli-runtime's printers, anything else through render.For. An
// unknown format's error lists both.
func printerFor(format string, opts render.Options) (render.Printer, error) {
	name, arg, hasArg := strings.Cut(format, "=")
	switch {
	case format == FormatName:
		return namePrinter{}, nil
	case slices.Contains(templateFormats, name):
		if !hasArg || arg == "" {
			return nil, fmt.Errorf("-o %s needs a template: -o %s=TEMPLATE", name, name)
		}
		flags := genericclioptions.NewKubeTemplatePrintFlags()
		*flags.TemplateArgument = arg
		p, err := flags.ToPrinter(name)
		if err != nil {
			return nil, fmt.Errorf("invalid -o %s: %w", name, err)
		}
		return documentPrinter{printer: p}, nil
	}
	p, err := render.For(format, opts)
	var unknown *render.UnknownFormatError
	if errors.As(err, &unknown) {
		unknown.Allowed = append(slices.Clone(unknown.Allowed), kubectlFormats()...)
	}
	return p, err
}

// documentPrinter runs a cli-runtime printer on the explanation document (-o json's): one
// Result, or a List of them.
type documentPrinter struct{ printer printers.ResourcePrinter }

func (p documentPrinter) Print(w io.Writer, r *explain.Result) error {
	return p.print(w, func(json render.Printer, b io.Writer) error { return json.Print(b, r) })
}

func (p documentPrinter) PrintList(w io.Writer, rs []*explain.Result) error {
	return p.print(w, func(json render.Printer, b io.Writer) error { return json.PrintList(b, rs) })
}

func (p documentPrinter) print(w io.Writer, write func(render.Printer, io.Writer) error) error {
	doc, err := document(write)
	if err != nil {
		return err
	}
	// Printed into a buffer: on a failure the go-template printer writes a dump of the
	// document to its writer, and stdout gets nothing then.
	var out bytes.Buffer
	if err := p.printer.PrintObj(&unstructured.Unstructured{Object: doc}, &out); err != nil {
		// The jsonpath printer adds the same dump to its error; the template and the reason
		// are what helps.
		msg, _, _ := strings.Cut(err.Error(), ". Printing more information for debugging the template:")
		return errors.New(strings.TrimSpace(msg))
	}
	_, err = w.Write(out.Bytes())
	return err
}

// document returns the -o json document write produces, decoded.
func document(write func(render.Printer, io.Writer) error) (map[string]any, error) {
	jp, err := render.For(render.FormatJSON, render.Options{})
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := write(jp, &b); err != nil {
		return nil, err
	}
	doc := map[string]any{}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		return nil, fmt.Errorf("decoding the explanation document: %w", err)
	}
	return doc, nil
}

// namePrinter is -o name: the generated objects, one KIND/NAME a line (cluster/outbound|9080||
// reviews.bookinfo.svc.cluster.local, authorization/bookinfo/allow-reads), through
// cli-runtime's NamePrinter. Objects istiod does not generate (missing) are left out.
type namePrinter struct{}

func (namePrinter) Print(w io.Writer, r *explain.Result) error {
	return namePrinter{}.PrintList(w, []*explain.Result{r})
}

func (namePrinter) PrintList(w io.Writer, rs []*explain.Result) error {
	list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "List"}}
	for _, r := range rs {
		for _, obj := range r.Objects {
			if obj.Missing {
				continue
			}
			kind := obj.Kind[strings.LastIndex(obj.Kind, ".")+1:]
			item := unstructured.Unstructured{Object: map[string]any{}}
			item.SetAPIVersion("v1")
			item.SetKind(kind)
			item.SetName(obj.Name)
			list.Items = append(list.Items, item)
		}
	}
	return (&printers.NamePrinter{}).PrintObj(list, w)
}

// kubectlFormat reports whether format is one of the formats printerFor adds: they print a
// part of the document, so the result's warnings go to stderr, as with -o envoy.
func kubectlFormat(format string) bool {
	name, _, _ := strings.Cut(format, "=")
	return name == FormatName || slices.Contains(templateFormats, name)
}
