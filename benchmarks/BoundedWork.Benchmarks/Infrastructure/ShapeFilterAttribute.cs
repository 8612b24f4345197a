using BenchmarkDotNet.Configs;
using BenchmarkDotNet.Filters;
using BenchmarkDotNet.Running;

namespace BoundedWork.Benchmarks.Infrastructure;

/// <summary>
/// Keeps only the listed producers/workers shapes of a class whose <c>Producers</c> and <c>Workers</c> are
/// <c>[Params]</c>: BenchmarkDotNet runs the full cross product of parameters, and some combinations (8 workers with
/// 1 producer, say) only add minutes. Each shape is written <c>"producers/workers"</c>.
/// </summary>
[AttributeUsage(AttributeTargets.Class)]
public sealed class ShapeFilterAttribute : Attribute, IConfigSource
{
    public ShapeFilterAttribute(params string[] shapes)
    {
        var keep = new HashSet<string>(shapes, StringComparer.Ordinal);
        Shapes = shapes;
        Config = ManualConfig.CreateEmpty().AddFilter(new SimpleFilter(benchmark => keep.Contains(ShapeOf(benchmark))));
    }

    /// <summary>Gets the shapes kept, as <c>"producers/workers"</c>.</summary>
    public IReadOnlyList<string> Shapes { get; }

    public IConfig Config { get; }

    private static string ShapeOf(BenchmarkCase benchmark) =>
        $"{benchmark.Parameters["Producers"]}/{benchmark.Parameters["Workers"]}";
}
