using System.Buffers;
using System.Globalization;
using System.Text.Json;
using System.Text.RegularExpressions;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>
/// Reads the JSON body of a settings change strictly: every problem is reported against the field it concerns
/// (or <c>body</c>), and a body with any problem changes nothing.
/// </summary>
internal static partial class SettingsRequest
{
    public const string Workers = "workers";
    public const string QueueCapacity = "queueCapacity";
    public const string RejectionPolicyField = "rejectionPolicy";
    public const string WaitTimeout = "waitTimeout";
    public const string SlowItemThreshold = "slowItemThreshold";
    public const string QueueWaitThreshold = "queueWaitThreshold";
    public const string PermitsPerSecond = "permitsPerSecond";
    public const string PermitBurst = "permitBurst";
    public const string Body = "body";
    public const string AdaptiveModeField = "adaptiveMode";
    public const string AdaptiveMinWorkers = "adaptiveMinWorkers";
    public const string AdaptiveMaxWorkers = "adaptiveMaxWorkers";
    public const string Pinned = "pinned";
    public const string PinFor = "pinFor";
    public const string TenantWeights = "tenantWeights";

    /// <summary>The largest body read; settings changes are a few dozen bytes.</summary>
    public const int MaxBodyBytes = 16 * 1024;

    public const string InfiniteWaitTimeout = "infinite";

    /// <summary>The most characters of a field name or value from the request that an error message repeats.</summary>
    public const int MaxEchoedLength = 64;

    /// <summary>
    /// The largest queue capacity the console sets. The core accepts up to <see cref="int.MaxValue"/> from options and
    /// <see cref="BoundedExecutor.Reconfigure(BoundedExecutorSettings)"/>; an operator's typo should not admit
    /// billions of items (each queued item holds its delegate, state and context).
    /// </summary>
    public const int MaxQueueCapacity = 1_000_000;

    /// <summary>What every duration field takes, as the error messages and docs/admin-console.md say it.</summary>
    public const string DurationFormat =
        "a duration in the form hh:mm:ss (hours, minutes and seconds, two digits each), optionally with days (d.hh:mm:ss) and a fraction of a second (hh:mm:ss.fffffff), such as \"00:00:05\" or \"00:00:00.250\", or \"infinite\"";

    // Durations the console sets. The core's own limit (Reconfigure, options) is any positive value up to about 24.8
    // days; below these minimums an alarm would report nearly every item, and beyond a day "infinite" is what is meant.
    private static readonly TimeSpan MinWaitTimeout = TimeSpan.FromMilliseconds(1);
    private static readonly TimeSpan MinSlowItemThreshold = TimeSpan.FromMilliseconds(100);
    private static readonly TimeSpan MinQueueWaitThreshold = TimeSpan.FromMilliseconds(10);
    private static readonly TimeSpan MaxDuration = TimeSpan.FromDays(1);

    private static readonly string[] s_patchFields = [Workers, QueueCapacity, RejectionPolicyField, WaitTimeout, SlowItemThreshold, QueueWaitThreshold, PermitsPerSecond, PermitBurst, AdaptiveModeField, AdaptiveMinWorkers, AdaptiveMaxWorkers, Pinned, PinFor, TenantWeights];
    private static readonly string[] s_putFields = [Workers, PinFor];
    private static readonly TimeSpan MinPinFor = TimeSpan.FromSeconds(1);

    /// <summary>
    /// Parses a PUT workers body (<c>{"workers": 8}</c>, the field required) or a PATCH body (any of the fields, at least
    /// one) into a change of the settings that sets exactly the fields the body names, checked against
    /// <paramref name="current"/> with the core's own validation.
    /// </summary>
    public static (Func<BoundedExecutorSettings, BoundedExecutorSettings>? Change, FieldErrors Errors) Parse(
        ReadOnlySequence<byte> body, bool workersOnly, BoundedExecutorSettings current, int maxWorkerCount) =>
        Parse(body, workersOnly, current, maxWorkerCount, out _);

    /// <summary>
    /// As the other overload, and says in <paramref name="pin"/> what the body asks of the worker-count pin
    /// (<see cref="PinRequest"/>): <c>pinFor</c> with <c>workers</c>, <c>"pinned": true</c> or <c>false</c>.
    /// </summary>
    public static (Func<BoundedExecutorSettings, BoundedExecutorSettings>? Change, FieldErrors Errors) Parse(
        ReadOnlySequence<byte> body, bool workersOnly, BoundedExecutorSettings current, int maxWorkerCount, out PinRequest pin)
    {
        pin = default;
        bool? pinned = null;
        TimeSpan? pinFor = null;
        var errors = new FieldErrors();
        var allowed = workersOnly ? s_putFields : s_patchFields;
        if (body.IsEmpty)
        {
            errors[Body] = [workersOnly
                ? "The request body is missing: send a JSON object such as {\"workers\": 8}."
                : $"The request body is missing: send a JSON object with any of {string.Join(", ", allowed)}, such as {{\"workers\": 8}}."];
            return (null, errors);
        }

        int? workers = null, capacity = null, permitsPerSecond = null, permitBurst = null;
        var changes = new List<Func<BoundedExecutorSettings, BoundedExecutorSettings>>();
        if (JsonChangeReader.ReadFields(body, allowed, $"the allowed fields are {string.Join(", ", allowed)}", errors, ReadField) is not { } fieldCount)
        {
            return (null, errors);
        }

        // Each field read sets its one setting: the change is these, applied in order to the settings in force.
        void ReadField(ref Utf8JsonReader reader, string field)
        {
            switch (field)
            {
                case Workers when ReadInt32(ref reader, field, errors) is { } value:
                    workers = value;
                    changes.Add(s => s with { WorkerCount = value });
                    break;
                case QueueCapacity when ReadInt32(ref reader, field, errors) is { } value:
                    capacity = value;
                    changes.Add(s => s with { QueueCapacity = value });
                    break;
                case RejectionPolicyField when ReadName<RejectionPolicy>(ref reader, field, errors) is { } value:
                    changes.Add(s => s with { RejectionPolicy = value });
                    break;
                case WaitTimeout when ReadTimeout(ref reader, field, errors) is { } value:
                    changes.Add(s => s with { WaitTimeout = value });
                    break;
                case SlowItemThreshold when ReadTimeout(ref reader, field, errors) is { } value:
                    changes.Add(s => s with { SlowItemThreshold = value });
                    break;
                case QueueWaitThreshold when ReadTimeout(ref reader, field, errors) is { } value:
                    changes.Add(s => s with { QueueWaitThreshold = value });
                    break;
                case PermitsPerSecond when ReadInt32(ref reader, field, errors) is { } value:
                    permitsPerSecond = value;
                    changes.Add(s => s with { PermitsPerSecond = value });
                    break;
                case PermitBurst when ReadInt32(ref reader, field, errors) is { } value:
                    permitBurst = value;
                    changes.Add(s => s with { PermitBurst = value });
                    break;
                case AdaptiveModeField when ReadName<AdaptiveMode>(ref reader, field, errors) is { } value:
                    changes.Add(s => s with { AdaptiveMode = value });
                    break;
                case AdaptiveMinWorkers when ReadInt32(ref reader, field, errors) is { } value:
                    changes.Add(s => s with { AdaptiveMinWorkerCount = value });
                    break;
                case AdaptiveMaxWorkers when reader.TokenType == JsonTokenType.Null:
                    changes.Add(s => s with { AdaptiveMaxWorkerCount = null });
                    break;
                case AdaptiveMaxWorkers when ReadInt32(ref reader, field, errors) is { } value:
                    changes.Add(s => s with { AdaptiveMaxWorkerCount = value });
                    break;
                case Pinned when reader.TokenType is JsonTokenType.True or JsonTokenType.False:
                    pinned = reader.TokenType == JsonTokenType.True;
                    break;
                case Pinned:
                    errors[Pinned] = [$"pinned must be true (pin the worker count in force) or false (unpin), not {JsonChangeReader.Describe(reader.TokenType)}."];
                    reader.Skip();
                    break;
                case PinFor when ReadTimeout(ref reader, field, errors) is { } value:
                    pinFor = value;
                    break;
                case TenantWeights when ReadWeights(ref reader, errors) is { } weights:
                    if (current.FairShare is null)
                    {
                        errors[TenantWeights] = ["tenantWeights needs fair share on: this executor's FairShare settings are not set (turn it on in its options)."];
                        break;
                    }

                    changes.Add(s => s.FairShare is null ? s : s with { FairShare = weights.Aggregate(s.FairShare, static (f, w) => f.WithWeight(w.Key, w.Value)) });
                    break;
            }
        }

        if (errors.Count == 0)
        {
            if (workersOnly && workers is null)
            {
                errors[Workers] = ["workers is required: send {\"workers\": 8}."];
            }
            else if (fieldCount == 0)
            {
                errors[Body] = [$"Set at least one of {string.Join(", ", allowed)}."];
            }
        }

        CheckRange(errors, Workers, workers, 1, maxWorkerCount, $"the executor's MaxWorkerCount ({maxWorkerCount})");
        CheckRange(errors, QueueCapacity, capacity, 1, MaxQueueCapacity, null, " The admin console sets at most this; a larger capacity can be configured in the executor's options.");
        CheckRange(errors, PermitsPerSecond, permitsPerSecond, 0, BoundedExecutorSettings.MaxPermitsPerSecond, null, " 0 turns the rate limit off.");
        CheckRange(errors, PermitBurst, permitBurst, 1, BoundedExecutorSettings.MaxPermitsPerSecond, null);
        if (errors.Count > 0)
        {
            return (null, errors);
        }

        BoundedExecutorSettings Change(BoundedExecutorSettings settings) => changes.Aggregate(settings, static (s, change) => change(s));

        CheckPin(errors, workers, pinned, pinFor, Change(current).AdaptiveMode);
        if (errors.Count > 0)
        {
            return (null, errors);
        }

        pin = new PinRequest(pinned == false, pinned == true || (workers is not null && Change(current).AdaptiveMode != BoundedWork.AdaptiveMode.Off), workers, pinFor ?? Timeout.InfiniteTimeSpan);

        // The core's own rules are the last word; report anything they refuse under the JSON field's name. Only the
        // fields of the body can be refused: the others keep the values in force, which are valid.
        foreach (var (setting, message) in Change(current).GetValidationErrors(maxWorkerCount))
        {
            errors[ToField(setting)] = [message];
        }

        return errors.Count > 0 ? (null, errors) : (Change, errors);
    }

    /// <summary>
    /// Cuts text taken from the request (a field name, a value) to <paramref name="max"/> characters for an error
    /// message, never splitting a surrogate pair, so an answer cannot be made much larger than a short request.
    /// </summary>
    public static string Shorten(string text, int max = MaxEchoedLength)
    {
        if (text.Length <= max)
        {
            return text;
        }

        var cut = char.IsHighSurrogate(text[max - 1]) ? max - 1 : max;
        return string.Concat(text.AsSpan(0, cut), "...");
    }

    public static string ToField(string setting) => setting switch
    {
        nameof(BoundedExecutorSettings.WorkerCount) => Workers,
        nameof(BoundedExecutorSettings.QueueCapacity) => QueueCapacity,
        nameof(BoundedExecutorSettings.RejectionPolicy) => RejectionPolicyField,
        nameof(BoundedExecutorSettings.WaitTimeout) => WaitTimeout,
        nameof(BoundedExecutorSettings.SlowItemThreshold) => SlowItemThreshold,
        nameof(BoundedExecutorSettings.QueueWaitThreshold) => QueueWaitThreshold,
        nameof(BoundedExecutorSettings.PermitsPerSecond) => PermitsPerSecond,
        nameof(BoundedExecutorSettings.PermitBurst) => PermitBurst,
        nameof(BoundedExecutorSettings.AdaptiveMode) => AdaptiveModeField,
        nameof(BoundedExecutorSettings.AdaptiveMinWorkerCount) => AdaptiveMinWorkers,
        nameof(BoundedExecutorSettings.AdaptiveMaxWorkerCount) => AdaptiveMaxWorkers,
        nameof(BoundedExecutorSettings.FairShare) => TenantWeights,
        _ => JsonNamingPolicy.CamelCase.ConvertName(setting),
    };

    public static string FormatTimeout(TimeSpan timeout) =>
        timeout == Timeout.InfiniteTimeSpan ? InfiniteWaitTimeout : timeout.ToString("c", CultureInfo.InvariantCulture);

    /// <summary>A pin needs the adaptive mode, a count to pin, and cannot be asked for and ended at once.</summary>
    private static void CheckPin(FieldErrors errors, int? workers, bool? pinned, TimeSpan? pinFor, AdaptiveMode mode)
    {
        if (pinned == false && (workers is not null || pinFor is not null))
        {
            errors[Pinned] = ["pinned false ends the pin; it cannot be sent with workers or pinFor."];
        }
        else if (pinFor is not null && workers is null && pinned != true)
        {
            errors[PinFor] = ["pinFor says how long a resize pins the worker count: send it with workers (or with pinned true)."];
        }
        else if ((pinFor is not null || pinned == true) && mode == BoundedWork.AdaptiveMode.Off)
        {
            errors[pinFor is not null ? PinFor : Pinned] = ["The worker count is pinned against the adaptive mode, which is Off: set adaptiveMode to On or Advisory first."];
        }
    }

    private static void CheckRange(FieldErrors errors, string field, int? value, int min, int max, string? maxName, string? aboveMaxHint = null)
    {
        if (value is not { } v || errors.ContainsKey(field))
        {
            return;
        }

        if (v < min)
        {
            errors[field] = [$"{field} must be at least {min} (was {v})."];
        }
        else if (v > max)
        {
            errors[field] = [$"{field} must not exceed {maxName ?? max.ToString(CultureInfo.InvariantCulture)} (was {v}).{aboveMaxHint}"];
        }
    }

    /// <summary>
    /// Reads <c>tenantWeights</c>: an object of tenant names and whole-number weights (1 to
    /// <see cref="FairShareSettings.MaxWeight"/>), such as <c>{"acme": 4}</c>; a bad name or weight is reported, shortened.
    /// </summary>
    private static Dictionary<string, int>? ReadWeights(ref Utf8JsonReader reader, FieldErrors errors)
    {
        if (reader.TokenType != JsonTokenType.StartObject)
        {
            errors[TenantWeights] = [$"tenantWeights must be an object of tenants and weights, such as {{\"acme\": 4}}, not {JsonChangeReader.Describe(reader.TokenType)}."];
            reader.Skip();
            return null;
        }

        var weights = new Dictionary<string, int>(StringComparer.Ordinal);
        var problems = new List<string>();
        while (reader.Read() && reader.TokenType == JsonTokenType.PropertyName)
        {
            // A name whose bytes are not UTF-8 text is this field's problem, not a failure of the request.
            if (!JsonChangeReader.TryGetText(ref reader, out var tenant))
            {
                problems.Add("tenantWeights: a tenant's name is not valid UTF-8 text.");
                reader.Read();
                reader.Skip();
                continue;
            }

            reader.Read();
            var shown = $"\"{JsonEncodedText.Encode(Shorten(tenant))}\""; // quoted and escaped: a name may hold anything
            if (FairShareSettings.GetTenantError(tenant) is { } nameError)
            {
                problems.Add($"tenantWeights {shown}: {nameError}");
                reader.Skip();
            }
            else if (reader.TokenType != JsonTokenType.Number || !reader.TryGetInt32(out var weight))
            {
                problems.Add($"tenantWeights {shown} must be a whole number from 1 to {FairShareSettings.MaxWeight}.");
                reader.Skip();
            }
            else if (weight < 1 || weight > FairShareSettings.MaxWeight)
            {
                problems.Add($"tenantWeights {shown} must be from 1 to {FairShareSettings.MaxWeight} (was {weight}).");
            }
            else
            {
                weights[tenant] = weight;
            }
        }

        if (weights.Count == 0 && problems.Count == 0)
        {
            problems.Add("tenantWeights must name at least one tenant, such as {\"acme\": 4}.");
        }

        if (problems.Count > 0)
        {
            errors[TenantWeights] = [.. problems];
            return null;
        }

        return weights;
    }

    private static int? ReadInt32(ref Utf8JsonReader reader, string field, FieldErrors errors)
    {
        if (reader.TokenType != JsonTokenType.Number)
        {
            errors[field] = [$"{field} must be a whole number, not {JsonChangeReader.Describe(reader.TokenType)}."];
            reader.Skip();
            return null;
        }

        if (reader.TryGetInt32(out var value))
        {
            return value;
        }

        var raw = Shorten(JsonChangeReader.RawText(ref reader));
        errors[field] = [raw.AsSpan().IndexOfAny(".eE") >= 0 && !(reader.TryGetDouble(out var d) && Math.Abs(d) > int.MaxValue)
            ? $"{field} must be a whole number (was {raw})."
            : $"{field} is out of range: {raw} does not fit a 32-bit integer."];
        return null;
    }

    /// <summary>
    /// Reads exactly one name of <typeparamref name="TEnum"/>, in any case, for <paramref name="field"/>: not a number,
    /// not comma-separated flags, no padding (all of which <see cref="Enum.TryParse{TEnum}(string, bool, out TEnum)"/>
    /// would take), and a string that is not valid UTF-8 text says so, as every other field does.
    /// </summary>
    private static TEnum? ReadName<TEnum>(ref Utf8JsonReader reader, string field, FieldErrors errors)
        where TEnum : struct, Enum
    {
        var names = string.Join(", ", Enum.GetNames<TEnum>());
        if (reader.TokenType != JsonTokenType.String)
        {
            errors[field] = [$"{field} must be a string, one of {names}; not {JsonChangeReader.Describe(reader.TokenType)}."];
            reader.Skip();
            return null;
        }

        if (!JsonChangeReader.TryGetText(ref reader, out var text))
        {
            errors[field] = [NotText(field)];
            return null;
        }

        foreach (var value in Enum.GetValues<TEnum>())
        {
            if (string.Equals(text, value.ToString(), StringComparison.OrdinalIgnoreCase))
            {
                return value;
            }
        }

        errors[field] = [$"{field} '{Shorten(text)}' is not one of {names}."];
        return null;
    }

    internal static TimeSpan? ReadTimeout(ref Utf8JsonReader reader, string field, FieldErrors errors)
    {
        if (reader.TokenType != JsonTokenType.String)
        {
            errors[field] = [$"{field} must be {DurationFormat}, not {JsonChangeReader.Describe(reader.TokenType)}."];
            reader.Skip();
            return null;
        }

        if (!JsonChangeReader.TryGetText(ref reader, out var text))
        {
            errors[field] = [NotText(field)];
            return null;
        }

        if (string.Equals(text, InfiniteWaitTimeout, StringComparison.OrdinalIgnoreCase))
        {
            return Timeout.InfiniteTimeSpan;
        }

        // TimeSpan's "c" parser alone also reads "5" as five days and "00:05" as five minutes: the shape is checked first.
        if (!DurationShape().IsMatch(text) || !TimeSpan.TryParseExact(text, "c", CultureInfo.InvariantCulture, out var duration))
        {
            errors[field] = [$"{field} '{Shorten(text)}' is not {DurationFormat}."];
            return null;
        }

        var (min, max) = DurationRange(field);
        if (duration < min || duration > max)
        {
            errors[field] = [$"{field} must be between {FormatBound(min)} and {FormatBound(max)} (was {text}), or \"{InfiniteWaitTimeout}\" {(field == WaitTimeout ? "for no limit" : field == PauseRequest.For ? "until resumed" : "to turn it off")}."];
            return null;
        }

        return duration;
    }

    /// <summary>The smallest and largest value the console sets for a duration; <c>"infinite"</c> is allowed besides.</summary>
    private static (TimeSpan Min, TimeSpan Max) DurationRange(string field) => field switch
    {
        WaitTimeout => (MinWaitTimeout, MaxDuration),
        SlowItemThreshold => (MinSlowItemThreshold, MaxDuration),
        QueueWaitThreshold => (MinQueueWaitThreshold, MaxDuration),
        PinFor => (MinPinFor, MaxDuration),
        PauseRequest.For => (MinPinFor, BoundedExecutor.MaxPauseDuration),
        _ => throw new ArgumentOutOfRangeException(nameof(field), field, "Not a duration field."),
    };

    /// <summary>A bound as an operator would type it: the constant format without trailing zeros in the fraction.</summary>
    private static string FormatBound(TimeSpan bound)
    {
        var text = bound.ToString("c", CultureInfo.InvariantCulture);
        return bound.Ticks % TimeSpan.TicksPerSecond == 0 ? text : text.TrimEnd('0');
    }

    /// <summary>
    /// The one duration format: the invariant constant ("c") format with hours, minutes and seconds all present as two
    /// digits, an optional day count and an optional fraction of up to seven digits. A leading minus is recognised
    /// only so that a negative value is refused by its range, with a clearer message.
    /// </summary>
    [GeneratedRegex(@"^-?(?:[0-9]{1,8}\.)?[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,7})?\z", RegexOptions.CultureInvariant)]
    private static partial Regex DurationShape();

    private static string NotText(string field) => $"{field} is not valid UTF-8 text.";
}

/// <summary>What a settings change asks of the worker-count pin.</summary>
/// <param name="Unpin">End the pin (<c>"pinned": false</c>).</param>
/// <param name="Pin">Pin: a resize while the adaptive mode is on, or <c>"pinned": true</c>.</param>
/// <param name="Workers">The count to pin, or <see langword="null"/> for the count in force.</param>
/// <param name="PinFor">How long, or <see cref="Timeout.InfiniteTimeSpan"/> until unpinned.</param>
internal readonly record struct PinRequest(bool Unpin, bool Pin, int? Workers, TimeSpan PinFor);
