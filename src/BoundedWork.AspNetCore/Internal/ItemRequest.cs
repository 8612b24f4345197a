using System.Buffers;
using System.Globalization;
using System.Text.Json;
using BoundedWork.Hosting;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>
/// Reads the input of the stored-item endpoints strictly: a search's query string (<c>state</c>, the filters,
/// <c>limit</c>, <c>cursor</c>) and an action's body (<c>action</c>, <c>state</c>, the same filters, <c>priority</c>,
/// <c>runAt</c>, and, to apply, <c>confirmToken</c>). Every problem is reported against the field it concerns, with the
/// query's own rules (<see cref="StoredItemQuery.Validate"/>, <see cref="StoredItemAction.Validate"/>) reported the same way.
/// </summary>
internal static class ItemRequest
{
    public const string State = "state";
    public const string Key = "key";
    public const string EnqueuedSince = "enqueuedSince";
    public const string EnqueuedUntil = "enqueuedUntil";
    public const string ChangedSince = "changedSince";
    public const string ChangedUntil = "changedUntil";
    public const string Error = "error";
    public const string Path = "path";
    public const string EqualsField = "equals";
    public const string Limit = "limit";
    public const string Cursor = "cursor";
    public const string Action = "action";
    public const string Priority = "priority";
    public const string RunAt = "runAt";
    public const string ConfirmToken = "confirmToken";

    /// <summary>The largest action body.</summary>
    public const int MaxBodyBytes = 16 * 1024;

    private const string TimeFormat = "an ISO 8601 date and time such as \"2026-11-23T14:05:00Z\" (UTC when no offset is given)";

    private static readonly string[] s_filterFields = [State, Key, EnqueuedSince, EnqueuedUntil, ChangedSince, ChangedUntil, Error, Path, EqualsField];
    private static readonly string[] s_searchFields = [.. s_filterFields, Limit, Cursor];
    private static readonly string[] s_previewFields = [Action, .. s_filterFields, Priority, RunAt];
    private static readonly string[] s_applyFields = [.. s_previewFields, ConfirmToken];

    /// <summary>The states by their names in the console, <c>bw</c> and the dashboard.</summary>
    public static readonly IReadOnlyList<(string Name, StoredItemState State)> States =
    [
        ("ready", StoredItemState.Ready), ("scheduled", StoredItemState.Scheduled), ("running", StoredItemState.Running),
        ("completed", StoredItemState.Completed), ("dead-letter", StoredItemState.DeadLetter), ("cancelled", StoredItemState.Cancelled),
    ];

    /// <summary>The actions by their names in the console, <c>bw</c> and the dashboard.</summary>
    public static readonly IReadOnlyList<(string Name, StoredItemActionKind Kind)> Actions =
    [
        ("requeue", StoredItemActionKind.Requeue), ("cancel", StoredItemActionKind.Cancel), ("delete", StoredItemActionKind.Delete),
        ("set-priority", StoredItemActionKind.SetPriority), ("set-run-at", StoredItemActionKind.SetRunAt),
    ];

    public static string Name(StoredItemState state) => States.First(s => s.State == state).Name;

    public static string Name(StoredItemActionKind kind) => Actions.First(a => a.Kind == kind).Name;

    /// <summary>Parses a search's query string; the keys are the query's names as sent.</summary>
    public static (StoredItemQuery? Query, FieldErrors Errors) ParseSearch(IEnumerable<KeyValuePair<string, string?[]>> parameters)
    {
        var errors = new FieldErrors();
        var values = new Dictionary<string, string>(StringComparer.Ordinal);
        foreach (var (name, given) in parameters)
        {
            if (!s_searchFields.Contains(name, StringComparer.Ordinal))
            {
                errors[SettingsRequest.Shorten(name)] = [$"Unknown query parameter; the search takes {string.Join(", ", s_searchFields)}."];
            }
            else if (given.Length != 1 || given[0] is not { } value)
            {
                errors[name] = ["Give it once, with a value."];
            }
            else
            {
                values[name] = value;
            }
        }

        var query = errors.Count == 0 ? BuildQuery(values, errors) : null;
        return query is not null && errors.Count == 0 ? (query, errors) : (null, errors);
    }

    /// <summary>Parses an action's body: a dry run's (<paramref name="apply"/> false) or an application's, which adds <c>confirmToken</c>.</summary>
    public static (StoredItemAction? Action, string? ConfirmToken, FieldErrors Errors) ParseAction(ReadOnlySequence<byte> body, bool apply)
    {
        var errors = new FieldErrors();
        if (body.IsEmpty)
        {
            errors[SettingsRequest.Body] = ["The request body is missing: send {\"action\": \"cancel\", \"state\": \"ready\", ...filters}" + (apply ? " with the confirmToken of its dry run." : ".")];
            return (null, null, errors);
        }

        var values = new Dictionary<string, string>(StringComparer.Ordinal);
        int? priority = null;
        var allowed = apply ? s_applyFields : s_previewFields;
        if (JsonChangeReader.ReadFields(body, allowed, $"an action takes {string.Join(", ", allowed)}", errors, ReadField, StringComparison.Ordinal, maxDepth: 2) is null)
        {
            return (null, null, errors);
        }

        void ReadField(ref Utf8JsonReader reader, string field)
        {
            if (field == Priority)
            {
                if (reader.TokenType == JsonTokenType.Number && reader.TryGetInt32(out var p))
                {
                    priority = p;
                }
                else
                {
                    errors[Priority] = [$"It must be a whole number between {EnqueueOptions.MinPriority} and {EnqueueOptions.MaxPriority}, not {JsonChangeReader.Describe(reader.TokenType)}{(reader.TokenType == JsonTokenType.Number ? $" ({SettingsRequest.Shorten(JsonChangeReader.RawText(ref reader))})" : string.Empty)}."];
                    reader.Skip();
                }

                return;
            }

            if (reader.TokenType != JsonTokenType.String)
            {
                errors[field] = [$"It must be a string, not {JsonChangeReader.Describe(reader.TokenType)}."];
                reader.Skip();
                return;
            }

            if (!JsonChangeReader.TryGetText(ref reader, out var text))
            {
                errors[field] = ["It is not valid UTF-8 text (or holds a lone surrogate escape)."];
                return;
            }

            values[field] = text;
        }

        if (errors.Count > 0)
        {
            return (null, null, errors);
        }

        StoredItemActionKind? kind = null;
        if (!values.TryGetValue(Action, out var actionName))
        {
            errors[Action] = [$"It is required: one of {string.Join(", ", Actions.Select(a => a.Name))}."];
        }
        else if (Actions.FirstOrDefault(a => a.Name == actionName) is { Name: not null } found)
        {
            kind = found.Kind;
        }
        else
        {
            errors[Action] = [$"Unknown action '{SettingsRequest.Shorten(actionName)}'; it must be one of {string.Join(", ", Actions.Select(a => a.Name))}."];
        }

        DateTimeOffset? runAt = null;
        if (values.TryGetValue(RunAt, out var runAtText))
        {
            if (TryParseTime(runAtText, out var time))
            {
                runAt = time;
            }
            else
            {
                errors[RunAt] = [$"It must be {TimeFormat} (was '{SettingsRequest.Shorten(runAtText)}')."];
            }
        }

        string? token = null;
        if (apply)
        {
            if (!values.TryGetValue(ConfirmToken, out token))
            {
                errors[ConfirmToken] = ["It is required: the confirmToken of the dry run (POST .../items/preview) of this same action."];
            }
            else if (ControlProblem(token) is { } problem)
            {
                errors[ConfirmToken] = [problem];
            }
        }

        var query = BuildQuery(values, errors);
        if (query is null || kind is null || errors.Count > 0)
        {
            return (null, null, errors);
        }

        var action = new StoredItemAction { Kind = kind.Value, Selection = query, Priority = priority, RunAt = runAt };
        try
        {
            action.Validate();
        }
        catch (ArgumentException ex)
        {
            errors[FieldOf(ex.ParamName)] = [ex.Message];
            return (null, null, errors);
        }

        return (action, token, errors);
    }

    /// <summary>The console's field for a property that <see cref="StoredItemQuery.Validate"/> or the store names.</summary>
    public static string FieldOf(string? property) => property switch
    {
        nameof(StoredItemQuery.State) => State,
        nameof(StoredItemQuery.OrderingKey) => Key,
        nameof(StoredItemQuery.EnqueuedSince) => EnqueuedSince,
        nameof(StoredItemQuery.EnqueuedUntil) => EnqueuedUntil,
        nameof(StoredItemQuery.ChangedSince) => ChangedSince,
        nameof(StoredItemQuery.ChangedUntil) => ChangedUntil,
        nameof(StoredItemQuery.ErrorContains) => Error,
        nameof(StoredItemQuery.PayloadPath) => Path,
        nameof(StoredItemQuery.PayloadEquals) => EqualsField,
        nameof(StoredItemQuery.Limit) => Limit,
        nameof(StoredItemQuery.Cursor) => Cursor,
        nameof(StoredItemAction.Kind) => Action,
        nameof(StoredItemAction.Priority) => Priority,
        nameof(StoredItemAction.RunAt) => RunAt,
        "confirmToken" => ConfirmToken,
        _ => SettingsRequest.Body,
    };

    /// <summary>The selection as the audit log and the replies describe it.</summary>
    public static string Describe(StoredItemQuery query)
    {
        var parts = new List<string> { $"{State}={Name(query.State)}" };
        void Add(string field, object? value)
        {
            if (value is not null)
            {
                parts.Add($"{field}={(value is DateTimeOffset time ? time.ToString("O", CultureInfo.InvariantCulture) : SettingsRequest.Shorten(value.ToString()!))}");
            }
        }

        Add(Key, query.OrderingKey);
        Add(EnqueuedSince, query.EnqueuedSince);
        Add(EnqueuedUntil, query.EnqueuedUntil);
        Add(ChangedSince, query.ChangedSince);
        Add(ChangedUntil, query.ChangedUntil);
        Add(Error, query.ErrorContains);
        Add(Path, query.PayloadPath);
        Add(EqualsField, query.PayloadEquals);
        return string.Join(" ", parts) + (query.MatchesWholeState ? " (every item of the state)" : string.Empty);
    }

    /// <summary>Builds the query from the fields' texts; reports against each field, then the query's own rules.</summary>
    private static StoredItemQuery? BuildQuery(Dictionary<string, string> values, FieldErrors errors)
    {
        foreach (var (field, value) in values)
        {
            if (field != Error && field != EqualsField && ControlProblem(value) is { } problem)
            {
                errors[field] = [problem];
            }
        }

        StoredItemState? state = null;
        if (!values.TryGetValue(State, out var stateName))
        {
            errors[State] = [$"It is required: one of {string.Join(", ", States.Select(s => s.Name))}."];
        }
        else if (States.FirstOrDefault(s => s.Name == stateName) is { Name: not null } found)
        {
            state = found.State;
        }
        else if (!errors.ContainsKey(State))
        {
            errors[State] = [$"Unknown state '{SettingsRequest.Shorten(stateName)}'; it must be one of {string.Join(", ", States.Select(s => s.Name))}."];
        }

        DateTimeOffset? Time(string field)
        {
            if (!values.TryGetValue(field, out var text) || errors.ContainsKey(field))
            {
                return null;
            }

            if (TryParseTime(text, out var time))
            {
                return time;
            }

            errors[field] = [$"It must be {TimeFormat} (was '{SettingsRequest.Shorten(text)}')."];
            return null;
        }

        var limit = 50;
        if (values.TryGetValue(Limit, out var limitText) && !errors.ContainsKey(Limit)
            && !(int.TryParse(limitText, NumberStyles.None, CultureInfo.InvariantCulture, out limit) && limit is >= 1 and <= StoredItemQuery.MaxLimit))
        {
            errors[Limit] = [$"It must be a whole number between 1 and {StoredItemQuery.MaxLimit} (was '{SettingsRequest.Shorten(limitText)}')."];
        }

        var query = new StoredItemQuery
        {
            State = state ?? StoredItemState.Ready,
            OrderingKey = values.GetValueOrDefault(Key),
            EnqueuedSince = Time(EnqueuedSince),
            EnqueuedUntil = Time(EnqueuedUntil),
            ChangedSince = Time(ChangedSince),
            ChangedUntil = Time(ChangedUntil),
            ErrorContains = values.GetValueOrDefault(Error),
            PayloadPath = values.GetValueOrDefault(Path),
            PayloadEquals = values.GetValueOrDefault(EqualsField),
            Limit = errors.ContainsKey(Limit) ? 50 : limit,
            Cursor = values.GetValueOrDefault(Cursor),
        };
        if (errors.Count > 0)
        {
            return null;
        }

        try
        {
            query.Validate();
        }
        catch (ArgumentException ex)
        {
            errors[FieldOf(ex.ParamName)] = [ex.Message];
            return null;
        }

        return query;
    }

    /// <summary>A control character (CR, LF, NUL, ...) where none belongs: the problem, or <see langword="null"/>.</summary>
    private static string? ControlProblem(string value) =>
        value.Any(char.IsControl) ? "It may not contain control characters (such as CR, LF or NUL)." : null;

    private static bool TryParseTime(string text, out DateTimeOffset time) =>
        DateTimeOffset.TryParse(text, CultureInfo.InvariantCulture, DateTimeStyles.AssumeUniversal | DateTimeStyles.AllowWhiteSpaces, out time)
        && text.AsSpan().ContainsAny("Tt") && text.Length <= 40;
}
