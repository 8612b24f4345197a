using System.Buffers;
using System.Diagnostics.CodeAnalysis;
using System.Text.Json;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>Reads the value of one allowed field, named as the allowed list spells it; the reader is on the value.</summary>
internal delegate void ReadField(ref Utf8JsonReader reader, string field);

/// <summary>
/// The one walk of a request's JSON object body (a settings change, a cluster change, a dead-letter selection): the
/// body must be a single object; each field is found among the allowed ones (in any case, unless the caller says
/// otherwise) and handed to a callback once; unknown, repeated and undecodable field names are reported
/// against the field (or <c>body</c>), and malformed JSON replaces every other problem.
/// </summary>
internal static class JsonChangeReader
{
    /// <summary>
    /// Walks the object in <paramref name="body"/> (not empty), calling <paramref name="readField"/> for the first
    /// occurrence of each field of <paramref name="allowed"/>. The first unknown field's message ends with
    /// <paramref name="allowedHint"/> (such as <c>"the allowed fields are a, b"</c>), the others do not.
    /// <paramref name="nameComparison"/> says how a field name is matched against <paramref name="allowed"/>, and
    /// <paramref name="maxDepth"/> how deeply values may nest before the body is malformed.
    /// </summary>
    /// <returns>
    /// How many distinct allowed fields the body names; <see langword="null"/> when the body is not a JSON object or
    /// not valid JSON, and then <paramref name="errors"/> holds that one problem and nothing else should be checked.
    /// </returns>
    public static int? ReadFields(
        ReadOnlySequence<byte> body,
        string[] allowed,
        string allowedHint,
        FieldErrors errors,
        ReadField readField,
        StringComparison nameComparison = StringComparison.OrdinalIgnoreCase,
        int maxDepth = 8)
    {
        var seen = new HashSet<string>(StringComparer.Ordinal);
        var unknownFields = 0;
        try
        {
            var reader = new Utf8JsonReader(body, new JsonReaderOptions { CommentHandling = JsonCommentHandling.Disallow, MaxDepth = maxDepth });
            if (!reader.Read() || reader.TokenType != JsonTokenType.StartObject)
            {
                errors[SettingsRequest.Body] = [$"The request body must be a JSON object, not {Describe(reader.TokenType)}."];
                return null;
            }

            while (reader.Read() && reader.TokenType != JsonTokenType.EndObject)
            {
                if (!TryGetText(ref reader, out var name))
                {
                    errors[SettingsRequest.Body] = ["A field name is not valid UTF-8 text."];
                    reader.Read();
                    reader.Skip();
                    continue;
                }

                reader.Read();
                var field = Array.Find(allowed, f => string.Equals(f, name, nameComparison));
                if (field is null)
                {
                    var shown = SettingsRequest.Shorten(name);
                    // The allowed fields are listed once, with the first unknown field, so that a body of many unknown fields
                    // gets a short answer however many fields the request takes.
                    errors[shown] = [unknownFields++ == 0
                        ? $"Unknown field '{shown}'; {allowedHint}."
                        : $"Unknown field '{shown}'."];
                    reader.Skip();
                    continue;
                }

                if (!seen.Add(field))
                {
                    errors[field] = [$"{field} appears more than once."];
                    reader.Skip();
                    continue;
                }

                readField(ref reader, field);
            }

            // A second value after the object, or a truncated object, is malformed JSON too.
            if (reader.TokenType != JsonTokenType.EndObject || reader.Read())
            {
                errors[SettingsRequest.Body] = ["The request body must hold exactly one JSON object."];
            }
        }
        catch (JsonException exception)
        {
            errors.Clear();
            errors[SettingsRequest.Body] = [$"The request body is not valid JSON: {SettingsRequest.Shorten(exception.Message, SettingsRequest.MaxEchoedLength * 4)}"];
            return null;
        }

        return seen.Count;
    }

    /// <summary>
    /// Reads the current string or property name, or says it is not text: the reader checks JSON's structure, not
    /// that a string's bytes are valid UTF-8 or that its escapes pair surrogates, which only decoding finds.
    /// </summary>
    public static bool TryGetText(ref Utf8JsonReader reader, [NotNullWhen(true)] out string? text)
    {
        try
        {
            text = reader.GetString()!;
            return true;
        }
        catch (InvalidOperationException)
        {
            text = null;
            return false;
        }
    }

    /// <summary>The current number's text as sent, for an error message (the caller shortens it).</summary>
    public static string RawText(ref Utf8JsonReader reader) =>
        System.Text.Encoding.UTF8.GetString(reader.HasValueSequence ? reader.ValueSequence.ToArray() : reader.ValueSpan);

    /// <summary>A token as an error message names it: "a string", "null", "an array".</summary>
    public static string Describe(JsonTokenType token) => token switch
    {
        JsonTokenType.String => "a string",
        JsonTokenType.Number => "a number",
        JsonTokenType.True or JsonTokenType.False => "a boolean",
        JsonTokenType.Null => "null",
        JsonTokenType.StartArray => "an array",
        JsonTokenType.StartObject => "an object",
        _ => "nothing",
    };
}
