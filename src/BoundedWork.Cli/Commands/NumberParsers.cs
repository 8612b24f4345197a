using System.CommandLine.Parsing;
using System.Globalization;

namespace BoundedWork.Cli.Commands;

/// <summary>
/// Numbers as the command line gives them, or an error that names the option and the value the user typed: never the
/// .NET type System.CommandLine names by default ("Cannot parse argument 'abc' ... 'System.Nullable`1[System.Int32]'").
/// The range is the command's, or the app's, to check.
/// </summary>
internal static class NumberParsers
{
    /// <summary>A whole number (<c>-p 4242</c>, <c>--workers 16</c>).</summary>
    public static int? WholeNumber(ArgumentResult result)
    {
        var text = TextOf(result);
        if (int.TryParse(text, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out var value))
        {
            return value;
        }

        result.AddError(System.Numerics.BigInteger.TryParse(text, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out _)
            ? $"{OptionName(result)}: '{text}' is too large for a whole number."
            : $"{OptionName(result)}: '{text}' is not a whole number.");
        return null;
    }

    /// <summary>A whole number for an argument or an option that always has one (an error leaves 0, never used: the parse failed).</summary>
    public static int RequiredWholeNumber(ArgumentResult result) => WholeNumber(result) ?? 0;

    /// <summary>A finite number, such as a count of seconds (<c>--timeout 2.5</c>).</summary>
    public static double? Number(ArgumentResult result, string what)
    {
        var text = TextOf(result);
        if (double.TryParse(text, NumberStyles.Float, CultureInfo.InvariantCulture, out var value))
        {
            if (double.IsFinite(value))
            {
                return value;
            }

            result.AddError($"{OptionName(result)}: {what} is finite (was {value.ToString(CultureInfo.InvariantCulture)}).");
            return null;
        }

        result.AddError($"{OptionName(result)}: '{text}' is not {what} (such as 5 or 2.5).");
        return null;
    }

    /// <summary>A finite number of seconds, for a non-nullable option.</summary>
    public static double Seconds(ArgumentResult result) => Number(result, "a number of seconds") ?? 0;

    private static string TextOf(ArgumentResult result) => result.Tokens.Count > 0 ? result.Tokens[0].Value : "";

    private static string OptionName(ArgumentResult result) => result.Parent is OptionResult option ? option.Option.Name : result.Argument.Name;
}
