using System.Globalization;
using System.Text.Json;

namespace BoundedWork.Cli.Rendering;

/// <summary>Reads fields of the admin API's documents, tolerating fields that are missing (older apps) or null.</summary>
internal static class Doc
{
    public static JsonElement Get(this JsonElement e, params string[] path)
    {
        foreach (var name in path)
        {
            if (e.ValueKind != JsonValueKind.Object || !e.TryGetProperty(name, out e))
            {
                return default;
            }
        }

        return e;
    }

    public static double? Number(this JsonElement e, params string[] path) =>
        e.Get(path) is { ValueKind: JsonValueKind.Number } n ? n.GetDouble() : null;

    public static long Long(this JsonElement e, params string[] path) => (long)(e.Number(path) ?? 0);

    public static string Text(this JsonElement e, params string[] path) => e.Get(path) switch
    {
        { ValueKind: JsonValueKind.String } s => s.GetString() ?? "",
        { ValueKind: JsonValueKind.Number } n => n.GetRawText(),
        { ValueKind: JsonValueKind.True } => "true",
        { ValueKind: JsonValueKind.False } => "false",
        _ => "",
    };

    public static bool Flag(this JsonElement e, params string[] path) => e.Get(path).ValueKind == JsonValueKind.True;

    public static IEnumerable<JsonElement> Items(this JsonElement e, params string[] path) =>
        e.Get(path) is { ValueKind: JsonValueKind.Array } a ? a.EnumerateArray() : [];

    public static string Rate(double? perSecond) => perSecond is { } r ? r.ToString(r < 10 ? "0.#" : "0", CultureInfo.InvariantCulture) : "-";

    public static string Duration(double? milliseconds) => milliseconds switch
    {
        null => "-",
        < 1 => $"{milliseconds.Value.ToString("0.##", CultureInfo.InvariantCulture)} ms",
        < 1000 => $"{milliseconds.Value.ToString("0", CultureInfo.InvariantCulture)} ms",
        < 60_000 => $"{(milliseconds.Value / 1000).ToString("0.0", CultureInfo.InvariantCulture)} s",
        _ => $"{(milliseconds.Value / 60_000).ToString("0.0", CultureInfo.InvariantCulture)} min",
    };
}
