using System.Globalization;

namespace BoundedWork.Benchmarks.Infrastructure;

/// <summary>
/// The command line of the console harnesses (<c>compare</c>, <c>trickle</c>): <c>--flag</c> switches and
/// <c>--name value</c> options. Every option must be consumed, so a misspelt one fails with a message that names it
/// instead of being ignored.
/// </summary>
public sealed class HarnessArguments
{
    private readonly Dictionary<string, string?> _values = new(StringComparer.Ordinal);
    private readonly HashSet<string> _consumed = new(StringComparer.Ordinal);
    private readonly string _usage;

    public HarnessArguments(ReadOnlySpan<string> args, string usage, params string[] switches)
    {
        _usage = usage;
        for (var i = 0; i < args.Length; i++)
        {
            var name = args[i];
            if (!name.StartsWith("--", StringComparison.Ordinal))
            {
                throw new ArgumentException($"Unexpected argument '{name}'. Usage: {usage}");
            }

            if (Array.IndexOf(switches, name) >= 0)
            {
                _values[name] = null;
            }
            else if (i + 1 < args.Length)
            {
                _values[name] = args[++i];
            }
            else
            {
                throw new ArgumentException($"{name} needs a value. Usage: {usage}");
            }
        }
    }

    /// <summary>Gets whether a switch (an option without a value) was given.</summary>
    public bool Has(string name)
    {
        _consumed.Add(name);
        return _values.ContainsKey(name);
    }

    public string? Text(string name)
    {
        _consumed.Add(name);
        return _values.TryGetValue(name, out var value) ? value : null;
    }

    public int WholeNumber(string name, int fallback, int minimum)
    {
        var text = Text(name);
        if (text is null)
        {
            return fallback;
        }

        if (!int.TryParse(text, NumberStyles.Integer, CultureInfo.InvariantCulture, out var value) || value < minimum)
        {
            throw new ArgumentException($"{name} must be an integer of at least {minimum} (was '{text}').");
        }

        return value;
    }

    public double Number(string name, double fallback, double minimum)
    {
        var text = Text(name);
        if (text is null)
        {
            return fallback;
        }

        if (!double.TryParse(text, NumberStyles.Float, CultureInfo.InvariantCulture, out var value) || value < minimum)
        {
            throw new ArgumentException($"{name} must be a number of at least {minimum.ToString(CultureInfo.InvariantCulture)} (was '{text}').");
        }

        return value;
    }

    /// <summary>Throws if an option was given that no harness asked for (a typo, most likely).</summary>
    public void EnsureAllUsed()
    {
        foreach (var name in _values.Keys)
        {
            if (!_consumed.Contains(name))
            {
                throw new ArgumentException($"Unknown option '{name}'. Usage: {_usage}");
            }
        }
    }
}
