using System.Globalization;
using System.Numerics;

namespace BoundedWork.PostgreSql.Benchmark;

/// <summary><c>--name value</c> options and <c>--flag</c> switches; unknown or malformed ones fail with a message.</summary>
internal sealed class Arguments
{
    private readonly Dictionary<string, string?> _values = new(StringComparer.Ordinal);
    private readonly HashSet<string> _used = new(StringComparer.Ordinal);

    public Arguments(IEnumerable<string> args, IReadOnlySet<string> flags)
    {
        using var e = args.GetEnumerator();
        while (e.MoveNext())
        {
            var name = e.Current;
            if (!name.StartsWith("--", StringComparison.Ordinal))
            {
                throw new ArgumentException($"Unexpected argument '{name}'.");
            }

            name = name[2..];
            if (flags.Contains(name))
            {
                _values[name] = null;
            }
            else if (e.MoveNext())
            {
                _values[name] = e.Current;
            }
            else
            {
                throw new ArgumentException($"--{name} needs a value.");
            }
        }
    }

    public bool Flag(string name)
    {
        _used.Add(name);
        return _values.ContainsKey(name);
    }

    public string? Text(string name)
    {
        _used.Add(name);
        return _values.TryGetValue(name, out var value) ? value : null;
    }

    public string Required(string name) => Text(name) ?? throw new ArgumentException($"--{name} is required.");

    public int Int(string name, int fallback, int min = 0, int max = int.MaxValue) =>
        Number(name, fallback, min, max, NumberStyles.Integer, "an integer");

    public double Double(string name, double fallback, double min = 0, double max = double.MaxValue) =>
        Number(name, fallback, min, max, NumberStyles.Float, "a number");

    private T Number<T>(string name, T fallback, T min, T max, NumberStyles styles, string kind)
        where T : INumber<T>
    {
        if (Text(name) is not { } text)
        {
            return fallback;
        }

        if (!T.TryParse(text, styles, CultureInfo.InvariantCulture, out var value) || value < min || value > max)
        {
            throw new ArgumentException($"--{name} must be {kind} between {min} and {max} (was '{text}').");
        }

        return value;
    }

    public int[] IntList(string name, int[] fallback, int min, int max)
    {
        if (Text(name) is not { } text)
        {
            return fallback;
        }

        var values = text.Split(',', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries)
            .Select(part => int.TryParse(part, NumberStyles.Integer, CultureInfo.InvariantCulture, out var v) && v >= min && v <= max
                ? v
                : throw new ArgumentException($"--{name} must be a comma-separated list of integers between {min} and {max} (was '{text}')."))
            .ToArray();
        return values.Length > 0 ? values : throw new ArgumentException($"--{name} must not be empty.");
    }

    /// <summary>Fails on any option that was given but never read.</summary>
    public void CheckAllUsed()
    {
        var unknown = _values.Keys.Where(key => !_used.Contains(key)).ToList();
        if (unknown.Count > 0)
        {
            throw new ArgumentException($"Unknown option(s): {string.Join(", ", unknown.Select(u => "--" + u))}.");
        }
    }
}
