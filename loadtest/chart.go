package loadtest

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Chart geometry: one panel per run, stacked, sharing both scales.
const (
	chartWidth  = 24 * vg.Centimeter
	panelHeight = 11 * vg.Centimeter
	mib         = 1 << 20
)

// WriteChart draws each server's stored write rate (MiB/s) over time, one
// line per server and one panel per run (stacked, same scales), with the
// measured window between two grey verticals and the write limit, when
// known, as a dashed horizontal. The format follows path's extension:
// .svg or .png. Runs without data (servers not exporting
// MetricStoreWriteBytes) get an empty panel saying so.
func WriteChart(path string, r *Report) error {
	ext := strings.ToLower(filepath.Ext(path))
	if ext != ".svg" && ext != ".png" {
		return fmt.Errorf("%w: %q: want .svg or .png", ErrUnsupportedChart, path)
	}
	panels, err := chartPanels(r)
	if err != nil {
		return err
	}
	height := panelHeight * vg.Length(len(panels))
	var c vg.CanvasWriterTo
	if ext == ".svg" {
		c = vgsvg.New(chartWidth, height)
	} else {
		c = vgimg.PngCanvas{Canvas: vgimg.New(chartWidth, height)}
	}
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2,
		PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4, PadY: vg.Millimeter * 6}
	grid := make([][]*plot.Plot, len(panels))
	for i, p := range panels {
		grid[i] = []*plot.Plot{p}
	}
	canvases := plot.Align(grid, tiles, draw.New(c))
	for i, p := range panels {
		p.Draw(canvases[i][0])
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("loadtest: write chart: %w", err)
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("loadtest: write chart %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("loadtest: write chart %s: %w", path, err)
	}
	return nil
}

// chartPanels builds one plot per run (at least one) on common axes.
func chartPanels(r *Report) ([]*plot.Plot, error) {
	xmin, xmax, ymax := chartRange(r)
	runs := r.Runs
	if len(runs) == 0 {
		runs = []RunResult{{Name: "no run"}}
	}
	var panels []*plot.Plot
	for _, run := range runs {
		p, err := runPanel(r, run)
		if err != nil {
			return nil, err
		}
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = xmin, xmax, 0, ymax
		panels = append(panels, p)
	}
	return panels, nil
}

// chartRange returns the common x range (seconds) and y maximum (MiB/s).
func chartRange(r *Report) (xmin, xmax, ymax float64) {
	xmin, xmax, ymax = -time.Duration(r.Settings.Warmup).Seconds(), time.Duration(r.Settings.Duration).Seconds(), float64(r.Settings.WriteLimit)/mib
	for _, run := range r.Runs {
		for _, s := range run.TimeSeries {
			for _, pt := range s.Points {
				xmin, xmax, ymax = min(xmin, pt.T), max(xmax, pt.T), max(ymax, pt.WriteBytesPerSec/mib)
			}
		}
	}
	if ymax <= 0 {
		ymax = 1
	}
	return xmin, xmax, ymax * 1.1
}

// runPanel draws one run.
func runPanel(r *Report, run RunResult) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: stored write rate per server (%.0f acked rows/s)", run.Name, run.AckedRowsPerSec)
	p.X.Label.Text = "seconds since the measurement start"
	p.Y.Label.Text = "stored writes, MiB/s"
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	drawn := 0
	for i, s := range run.TimeSeries {
		if len(s.Points) == 0 {
			continue
		}
		xys := make(plotter.XYs, len(s.Points))
		for j, pt := range s.Points {
			xys[j] = plotter.XY{X: pt.T, Y: pt.WriteBytesPerSec / mib}
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, fmt.Errorf("loadtest: chart: %w", err)
		}
		l.Color, l.Width = plotutil.Color(i), vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(s.ID, l)
		drawn++
	}
	if drawn == 0 {
		p.Title.Text += fmt.Sprintf("\nno data: the servers do not export %s", MetricStoreWriteBytes)
	}
	if lim := r.Settings.WriteLimit; lim > 0 {
		f := plotter.NewFunction(func(float64) float64 { return float64(lim) / mib })
		f.Dashes, f.Color = []vg.Length{vg.Points(4), vg.Points(3)}, color.Gray{Y: 80}
		p.Add(f)
		p.Legend.Add("write limit", f)
	}
	return p, addWindow(p, run)
}

// addWindow marks the measured window [0, Seconds] with grey verticals.
func addWindow(p *plot.Plot, run RunResult) error {
	for _, x := range []float64{0, run.Seconds} {
		l, err := plotter.NewLine(plotter.XYs{{X: x, Y: 0}, {X: x, Y: 1e12}})
		if err != nil {
			return fmt.Errorf("loadtest: chart: %w", err)
		}
		l.Color = color.Gray{Y: 170}
		p.Add(l)
	}
	return nil
}
