namespace BoundedWork.Cli.Rendering;

/// <summary>A row of block characters, one per sample, scaled to the largest of them (or to a given maximum).</summary>
internal static class Sparkline
{
    private const string Blocks = " ▁▂▃▄▅▆▇█";

    public static string Of(IReadOnlyList<double> values, int width, double? max = null)
    {
        if (values.Count == 0)
        {
            return "";
        }

        var shown = values.Skip(Math.Max(0, values.Count - width)).ToList();
        var top = Math.Max(max ?? shown.Max(), 1e-9);
        return string.Concat(shown.Select(v => v <= 0 ? ' ' : Blocks[Math.Clamp((int)Math.Ceiling(v / top * (Blocks.Length - 1)), 1, Blocks.Length - 1)]));
    }
}
