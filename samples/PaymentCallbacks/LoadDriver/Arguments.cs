using System.Globalization;

namespace PaymentCallbacks.LoadDriver;

/// <summary>Command-line options as <c>--name value</c> pairs, with errors that name the option.</summary>
internal sealed class Arguments
{
    private readonly Dictionary<string, string> _values = new(StringComparer.Ordinal);

    /// <summary>Parses <paramref name="args"/>.</summary>
    /// <param name="args">The arguments after the command.</param>
    public Arguments(IEnumerable<string> args)
    {
        string? name = null;
        foreach (var arg in args)
        {
            if (arg.StartsWith("--", StringComparison.Ordinal))
            {
                if (name is not null)
                {
                    _values[name] = "true";
                }

                name = arg[2..];
            }
            else if (name is not null)
            {
                _values[name] = arg;
                name = null;
            }
            else
            {
                throw new ArgumentException($"Unexpected argument '{arg}': options are --name value.");
            }
        }

        if (name is not null)
        {
            _values[name] = "true";
        }
    }

    /// <summary>Gets a required string option.</summary>
    /// <param name="name">The option's name without dashes.</param>
    /// <returns>Its value.</returns>
    public string Required(string name) =>
        _values.TryGetValue(name, out var value) ? value : throw new ArgumentException($"--{name} is required.");

    /// <summary>Gets an optional string option.</summary>
    /// <param name="name">The option's name.</param>
    /// <returns>Its value or <see langword="null"/>.</returns>
    public string? Optional(string name) => _values.GetValueOrDefault(name);

    /// <summary>Gets a number option.</summary>
    /// <param name="name">The option's name.</param>
    /// <param name="fallback">The value when it is absent.</param>
    /// <returns>Its value.</returns>
    public double Number(string name, double fallback)
    {
        if (!_values.TryGetValue(name, out var text))
        {
            return fallback;
        }

        return double.TryParse(text, NumberStyles.Float, CultureInfo.InvariantCulture, out var value) && value >= 0
            ? value
            : throw new ArgumentException($"--{name} must be a non-negative number, not '{text}'.");
    }

    /// <summary>Gets a flag.</summary>
    /// <param name="name">The option's name.</param>
    /// <returns>Whether it was given.</returns>
    public bool Flag(string name) => _values.TryGetValue(name, out var v) && v != "false";
}
