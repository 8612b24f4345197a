using System.Text.RegularExpressions;

namespace BoundedWork.Docs.Tests;

/// <summary>The two pages that list the instruments, docs/opentelemetry.md and docs/metrics-and-events.md, name the same ones.</summary>
public sealed partial class InstrumentPagesTests
{
    [Fact]
    public void MetricsAndEvents_NamesEveryInstrumentOfTheOpenTelemetryTable()
    {
        var instruments = InstrumentTable(Documentation.Read("docs/opentelemetry.md"));
        var metricsAndEvents = Documentation.Read("docs/metrics-and-events.md");

        Assert.True(instruments.Count >= 20, $"Read only {instruments.Count} instruments from docs/opentelemetry.md.");
        var missing = instruments.Where(name => !metricsAndEvents.Contains($"`{name}`", StringComparison.Ordinal)).ToList();
        Assert.True(missing.Count == 0, $"docs/metrics-and-events.md does not name: {string.Join(", ", missing)}.");
    }

    /// <summary>The full names (<c>boundedwork.…</c>, not the <c>.completed</c> shorthands) in the first column of the "### Instruments" table.</summary>
    private static List<string> InstrumentTable(string text)
    {
        var lines = text.ReplaceLineEndings("\n").Split('\n');
        var start = Array.IndexOf(lines, "### Instruments");
        Assert.True(start >= 0, "docs/opentelemetry.md has no '### Instruments' section.");
        return [.. lines.Skip(start + 1)
            .SkipWhile(static line => !line.StartsWith('|'))
            .TakeWhile(static line => line.StartsWith('|'))
            .Skip(2) // the header and its rule
            .SelectMany(static line => FullName().Matches(line.Split('|')[1]).Select(static m => m.Groups["name"].Value))];
    }

    [GeneratedRegex(@"`(?<name>boundedwork\.[a-z0-9_.]+)`")]
    private static partial Regex FullName();
}
