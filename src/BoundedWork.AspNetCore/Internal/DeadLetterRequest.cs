using System.Buffers;
using System.Globalization;
using System.Text.Json;
using BoundedWork.Hosting;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>
/// Reads the input of the dead-letter endpoints strictly: a list's query string (<c>limit</c>, <c>since</c>,
/// <c>until</c>, <c>cursor</c>), an item id from the route, and a selection body (<c>{"ids": [...]}</c> or
/// <c>{"all": true, "since": ..., "until": ...}</c>). Every problem is reported against the field it concerns.
/// </summary>
internal static class DeadLetterRequest
{
    public const string Limit = "limit";
    public const string Since = "since";
    public const string Until = "until";
    public const string Cursor = "cursor";
    public const string Ids = "ids";
    public const string All = "all";
    public const string Id = "id";

    /// <summary>The largest selection body: 1,000 ids of up to 19 digits fit with room to spare.</summary>
    public const int MaxBodyBytes = 64 * 1024;

    private const string TimeFormat = "an ISO 8601 date and time such as \"2026-11-23T14:05:00Z\" (UTC when no offset is given)";

    /// <summary>How deeply a selection's values may nest (an object holding an array of ids needs two).</summary>
    private const int SelectionMaxDepth = 4;

    private static readonly string[] s_queryFields = [Limit, Since, Until, Cursor];
    private static readonly string[] s_selectionFields = [Ids, All, Since, Until];

    /// <summary>Parses a list's query string; the keys are the query's names as sent.</summary>
    public static (DeadLetterQuery? Query, FieldErrors Errors) ParseQuery(IEnumerable<KeyValuePair<string, string?[]>> parameters)
    {
        var errors = new FieldErrors();
        var query = new DeadLetterQuery();
        foreach (var (name, values) in parameters)
        {
            if (!s_queryFields.Contains(name, StringComparer.Ordinal))
            {
                errors[SettingsRequest.Shorten(name)] = [$"Unknown query parameter; the list takes {string.Join(", ", s_queryFields)}."];
                continue;
            }

            if (values.Length != 1 || values[0] is not { } value)
            {
                errors[name] = ["Give it once, with a value."];
                continue;
            }

            switch (name)
            {
                case Limit when int.TryParse(value, NumberStyles.None, CultureInfo.InvariantCulture, out var limit) && limit is >= 1 and <= DeadLetterQuery.MaxLimit:
                    query = query with { Limit = limit };
                    break;
                case Limit:
                    errors[name] = [$"It must be a whole number between 1 and {DeadLetterQuery.MaxLimit} (was '{SettingsRequest.Shorten(value)}')."];
                    break;
                case Since or Until when TryParseTime(value, out var time):
                    query = name == Since ? query with { Since = time } : query with { Until = time };
                    break;
                case Since or Until:
                    errors[name] = [$"It must be {TimeFormat} (was '{SettingsRequest.Shorten(value)}')."];
                    break;
                default:
                    query = query with { Cursor = value };
                    break;
            }
        }

        if (query is { Since: { } from, Until: { } to } && to <= from)
        {
            errors[Until] = ["It must be after since."];
        }

        return errors.Count == 0 ? (query, errors) : (null, errors);
    }

    /// <summary>Parses an item id from the route: a positive whole number.</summary>
    public static long? ParseId(string? text) =>
        long.TryParse(text, NumberStyles.None, CultureInfo.InvariantCulture, out var id) && id > 0 ? id : null;

    /// <summary>
    /// Parses the body of a single item's requeue or purge: empty, or an empty JSON object (the id is in the route).
    /// </summary>
    public static FieldErrors ParseEmpty(ReadOnlySequence<byte> body)
    {
        var errors = new FieldErrors();
        if (!body.IsEmpty)
        {
            JsonChangeReader.ReadFields(body, [], "the body must be empty or {}: the item's id is in the path", errors, static (ref _, _) => { }, StringComparison.Ordinal, SelectionMaxDepth);
        }

        return errors;
    }

    /// <summary>Parses a selection: <c>{"ids": [1, 2]}</c>, or <c>{"all": true}</c> with optional <c>since</c> and <c>until</c>.</summary>
    public static (DeadLetterSelection? Selection, FieldErrors Errors) ParseSelection(ReadOnlySequence<byte> body)
    {
        var errors = new FieldErrors();
        if (body.IsEmpty)
        {
            errors[SettingsRequest.Body] = ["The request body is missing: send {\"ids\": [1, 2, 3]} or {\"all\": true} (optionally with \"since\" and \"until\")."];
            return (null, errors);
        }

        List<long>? ids = null;
        bool idsGiven = false;
        bool? all = null;
        DateTimeOffset? since = null, until = null;

        // Field names are matched exactly, as the documents spell them.
        if (JsonChangeReader.ReadFields(body, s_selectionFields, $"a selection takes {Ids}, or {All} with {Since} and {Until}", errors, ReadField, StringComparison.Ordinal, SelectionMaxDepth) is null)
        {
            return (null, errors);
        }

        void ReadField(ref Utf8JsonReader reader, string field)
        {
            switch (field)
            {
                case Ids:
                    idsGiven = true;
                    ids = ReadIds(ref reader, errors);
                    break;
                case All when reader.TokenType == JsonTokenType.True:
                    all = true;
                    break;
                case All:
                    errors[All] = ["It must be true, to select every dead letter (in the window of since and until); to select some, give ids instead."];
                    reader.Skip();
                    break;
                case Since or Until when reader.TokenType == JsonTokenType.String && JsonChangeReader.TryGetText(ref reader, out var text) && TryParseTime(text, out var time):
                    if (field == Since)
                    {
                        since = time;
                    }
                    else
                    {
                        until = time;
                    }

                    break;
                case Since or Until:
                    errors[field] = [$"It must be {TimeFormat}."];
                    reader.Skip();
                    break;
            }
        }

        if (errors.Count > 0)
        {
            return (null, errors);
        }

        if (idsGiven == (all is true))
        {
            errors[SettingsRequest.Body] = ["Give either ids (some dead letters) or \"all\": true (every dead letter, optionally between since and until), not both and not neither."];
        }
        else if (ids is not null && (since is not null || until is not null))
        {
            errors[since is not null ? Since : Until] = ["A time window goes with \"all\": true, not with ids."];
        }
        else if (since is { } from && until is { } to && to <= from)
        {
            errors[Until] = ["It must be after since."];
        }

        return errors.Count > 0 ? (null, errors)
            : ids is not null ? (DeadLetterSelection.ByIds(ids), errors)
            : (DeadLetterSelection.All(since, until), errors);
    }

    private static List<long>? ReadIds(ref Utf8JsonReader reader, FieldErrors errors)
    {
        const string Rule = "It must be an array of 1 to 1000 item ids (positive whole numbers), such as [1, 2, 3].";
        if (reader.TokenType != JsonTokenType.StartArray)
        {
            errors[Ids] = [Rule];
            reader.Skip();
            return null;
        }

        var ids = new List<long>();
        while (reader.Read() && reader.TokenType != JsonTokenType.EndArray)
        {
            if (reader.TokenType != JsonTokenType.Number || !reader.TryGetInt64(out var id) || id < 1)
            {
                errors[Ids] = [Rule];
                reader.Skip();
                continue;
            }

            ids.Add(id);
        }

        if (ids.Count is 0 or > DeadLetterSelection.MaxIds)
        {
            errors[Ids] = [$"{Rule} (It had {ids.Count}.)"];
        }

        return ids;
    }

    private static bool TryParseTime(string text, out DateTimeOffset time) =>
        DateTimeOffset.TryParse(text, CultureInfo.InvariantCulture, DateTimeStyles.AssumeUniversal | DateTimeStyles.AllowWhiteSpaces, out time)
        && text.AsSpan().ContainsAny("Tt") && text.Length <= 40;
}
